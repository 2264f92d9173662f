package integration

import (
	"slices"
	"sync/atomic"
	"testing"

	"gorm.io/gorm"

	"github.com/shardid/shardid"
)

// Models of the preload tests: users with colocated photos, and an unsharded
// company each belongs to, whose AfterFind is counted.
type (
	PlUser struct {
		ID        int64 `shardid:""`
		Name      string
		Photos    []PlPhoto `gorm:"foreignKey:UserID"`
		CompanyID uint
		Company   PlCompany
	}
	PlPhoto struct {
		ID     int64 `shardid:"colocate:UserID"`
		UserID int64
		URL    string
	}
	PlCompany struct {
		ID   uint
		Name string
	}
)

var companyFinds atomic.Int64

func (c *PlCompany) AfterFind(*gorm.DB) error { companyFinds.Add(1); return nil }

// TestPreloadOverSeveralDatabasesIsOneQuery: the preload of rows read from
// several databases is one preload, as on one database: its own Order and
// Limit apply to all its rows, and an unsharded preloaded row is read, and
// its AfterFind run, once.
func TestPreloadOverSeveralDatabasesIsOneQuery(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		r := newRouting(t, b)
		fresh(t, r.db, &PlUser{}, &PlPhoto{})
		must(t, r.db.Migrator().DropTable(&PlCompany{}))
		must(t, r.db.AutoMigrate(&PlCompany{}))
		company := PlCompany{Name: "acme"}
		must(t, r.db.Create(&company).Error)
		var photos []int64
		for k := range physicalShards {
			u := PlUser{Name: "u", CompanyID: company.ID, Photos: []PlPhoto{{URL: "a"}, {URL: "b"}, {URL: "c"}}}
			must(t, r.db.Clauses(shardid.OnShard(k*r.plugin.Layout().ShardCount()/physicalShards)).Create(&u).Error)
			for _, p := range u.Photos {
				photos = append(photos, p.ID)
			}
		}
		slices.Sort(photos)
		want := []int64{photos[len(photos)-1], photos[len(photos)-2]} // one preload query: ORDER BY id DESC LIMIT 2 over all of them

		var users []PlUser
		must(t, r.db.Clauses(shardid.AllShards()).Order("id").
			Preload("Photos", func(tx *gorm.DB) *gorm.DB { return tx.Order("id desc").Limit(2) }).Find(&users).Error)
		var got []int64
		for _, u := range users {
			for _, p := range u.Photos {
				got = append(got, p.ID)
			}
		}
		slices.Sort(got)
		slices.Sort(want)
		if len(users) != physicalShards || !slices.Equal(got, want) {
			t.Fatalf("%d users, preloaded photos %v; want %d users and the photos %v, as one preload query gives", len(users), got, physicalShards, want)
		}

		companyFinds.Store(0)
		users = nil
		must(t, r.db.Clauses(shardid.AllShards()).Preload("Company").Find(&users).Error)
		if n := companyFinds.Load(); n != 1 {
			t.Errorf("the unsharded company's AfterFind ran %d times for %d users on %d databases; want once, as on one database", n, len(users), physicalShards)
		}
		for _, u := range users {
			if u.Company.Name != "acme" {
				t.Fatalf("a user's company was not preloaded: %+v", u)
			}
		}
	})
}
