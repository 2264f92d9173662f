// Package bench compares shardid's generators with the libraries users have
// today, side by side in one run. It is its own module so that those
// libraries never become dependencies of shardid:
//
//	cd bench && go test -run '^$' -bench . -count 6 | tee new.txt && benchstat new.txt
package bench
