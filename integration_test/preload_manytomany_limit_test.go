package integration

import (
	"errors"
	"testing"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/shardid/shardid"
)

// TestManyToManyPreloadLimitIsRefusedHoweverGiven: a many2many preload of
// owners on several databases reads each database's join rows and targets
// apart, so a LIMIT or OFFSET of its own would hold per database; it is
// refused with ErrCrossShard however the preload's function gives it (Limit,
// Offset, a scope, a scope's scope, a clause), never applied per database.
func TestManyToManyPreloadLimitIsRefusedHoweverGiven(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		r := newRouting(t, b)
		fresh(t, r.db, asModels...)
		marks := []asMark{{Label: "x"}, {Label: "y"}}
		must(t, r.db.Create(&marks).Error)
		n := r.plugin.Layout().ShardCount()
		var ids []int64
		for i := range physicalShards {
			o := asOwner{Name: "o", Marks: marks[i%2:]} // x and y on some databases, y alone on others
			must(t, r.db.Clauses(shardid.OnShard(i*n/physicalShards)).Omit("Marks.*").Create(&o).Error)
			ids = append(ids, o.ID)
		}
		first := func(tx *gorm.DB) *gorm.DB { return tx.Order("label").Limit(1) }
		one := 1
		forms := map[string]func(tx *gorm.DB) *gorm.DB{
			"Limit":  first,
			"Offset": func(tx *gorm.DB) *gorm.DB { return tx.Order("label").Offset(1) },
			"Scopes": func(tx *gorm.DB) *gorm.DB { return tx.Scopes(first) },
			"a scope's scope": func(tx *gorm.DB) *gorm.DB {
				return tx.Scopes(func(d *gorm.DB) *gorm.DB { return d.Scopes(first) })
			},
			"Clauses": func(tx *gorm.DB) *gorm.DB { return tx.Order("label").Clauses(clause.Limit{Limit: &one}) },
		}
		for name, preload := range forms {
			var os []asOwner
			err := r.db.Clauses(shardid.AllShards()).Preload("Marks", preload).Order("id").Find(&os).Error
			if !errors.Is(err, shardid.ErrCrossShard) {
				got := map[int64][]string{}
				for _, o := range os {
					for _, m := range o.Marks {
						got[o.ID] = append(got[o.ID], m.Label)
					}
				}
				t.Errorf("%s: a many2many preload's limit over owners on %d databases: err %v, marks %v; want ErrCrossShard (one database gives x alone, to the owners that have it)", name, physicalShards, err, got)
			}
		}
		var os []asOwner // one database's owners: GORM's own preload, its limit over all their targets
		must(t, r.db.Where("id = ?", ids[0]).Preload("Marks", forms["Scopes"]).Find(&os).Error)
		if len(os) != 1 || len(os[0].Marks) != 1 || os[0].Marks[0].Label != "x" {
			t.Errorf("one database's owner preloaded with a scope's limit: %+v; want its mark x", os)
		}
	})
}
