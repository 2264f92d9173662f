module github.com/shardid/shardid/bench

go 1.26.8

require (
	github.com/bwmarrin/snowflake v0.3.0
	github.com/shardid/shardid v0.0.0
	github.com/sony/sonyflake v1.2.0
)

require (
	filippo.io/edwards25519 v1.1.0 // indirect
	github.com/go-sql-driver/mysql v1.8.1 // indirect
	github.com/google/uuid v1.6.0 // indirect
)

replace github.com/shardid/shardid => ../
