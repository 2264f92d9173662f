package engine

import (
	"errors"
	"fmt"
	"strings"
	"sync"

	"gorm.io/gorm"

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

// mergeOrderOfAll is mergeOrderOf of every run's database, refused where
// a text column does not order as bytes on all of them: a part of a few rows (one, of a
// LIMIT 1) cannot show by its order that its database's differs.
func (e *Engine) mergeOrderOfAll(db *gorm.DB, m *model, o *shardrouter.Order, runs []queryPart) (mergeOrder, error) {
	each := make([]mergeOrder, len(runs))
	errs := make([]error, len(runs))
	e.eachRun(runs, func(i int) { each[i], errs[i] = e.mergeOrderOf(db, m, o, runs[i].k) })
	if err := errors.Join(errs...); err != nil {
		return each[0], err
	}
	for _, c := range o.Columns {
		if !c.Text {
			continue
		}
		read := make([][]shardrouter.TextComparison, len(runs))
		for i := range each {
			read[i] = []shardrouter.TextComparison{each[i].text[c.Field]}
		}
		if common := e.commonComparison(runs, read, 0); !common.Order {
			return each[0], fmt.Errorf("%w: %s: ORDER BY %s over several physical databases: the column's collation %s, and the merge does not reproduce it in Go", ErrCrossShard, m.schema.Name, c.Field.DBName, common.Collation)
		}
	}
	return each[0], nil
}
