package engine

import (
	"fmt"
	"strings"
	"sync"

	"github.com/shardid/shardid/shardrouter"
)

// Each physical database orders and groups a part's text by its own
// collation, and two databases may have different ones (a server whose
// default is libc's C.UTF-8 beside one whose default is ICU's en-US): the
// merge may compare text as bytes only where every database does.

// commonComparison is how column c of read (per run, the comparisons of
// the text columns) compares on every database at once: as bytes only
// where each database compares so, its trailing spaces read alike.
func (e *Engine) commonComparison(runs []queryPart, read [][]shardrouter.TextComparison, c int) shardrouter.TextComparison {
	common := read[0][c]
	differ := false
	for i := range read[1:] {
		x := read[i+1][c]
		common.Equal = common.Equal && x.Equal
		common.Order = common.Order && x.Order
		if x.PadSpace != common.PadSpace || x.TrimSpace != common.TrimSpace {
			common.Equal, common.Order = false, false // trailing spaces read apart
		}
		differ = differ || x != read[0][c]
	}
	if differ {
		var each []string
		for i := range read {
			each = append(each, e.physical[runs[i].k].name+": "+read[i][c].Collation)
		}
		common.Collation = fmt.Sprintf("differs between the physical databases (%s)", strings.Join(each, "; "))
	}
	return common
}

// eachRun calls fn for each run's index, Config.PartsAtOnce at a time.
func (e *Engine) eachRun(runs []queryPart, fn func(int)) {
	lanes := make(chan struct{}, e.config.partsAtOnce())
	var wg sync.WaitGroup
	for i := range runs {
		lanes <- struct{}{}
		wg.Add(1)
		goPart(func() { defer wg.Done(); defer func() { <-lanes }(); fn(i) })
	}
	wg.Wait()
}
