module github.com/shardid/shardid/bench

go 1.26.8

toolchain go1.26.11

require (
	github.com/bwmarrin/snowflake v0.3.0
	github.com/shardid/shardid v0.0.0
	github.com/sony/sonyflake v1.2.0
)

require github.com/google/uuid v1.6.0 // indirect

replace github.com/shardid/shardid => ../
