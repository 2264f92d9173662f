package shardmigrator

import "errors"

// ErrShardsDisagree is returned when the physical databases answer a
// question about a sharded table differently; the error names them. The
// root package gives it to users as shardid.ErrShardsDisagree.
var ErrShardsDisagree = errors.New("shardid: physical databases disagree")
