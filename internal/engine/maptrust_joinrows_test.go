package engine

import (
	"errors"
	"testing"

	"gorm.io/gorm"
)

type trustLang struct {
	ID   int64
	Code string
}

type trustSpeaker struct {
	ID    int64 `shardid:""`
	Name  string
	Langs []trustLang `gorm:"many2many:trust_speaker_langs"`
}

func TestJoinRowsOfAShardAreRefusedWhileTheMapIsDistrusted(t *testing.T) {
	db, e := openEngine(t, Config{}, true)
	must(t, e.Migrator(db).AutoMigrate(&trustLang{}, &trustSpeaker{}))
	en := trustLang{Code: "en"}
	must(t, db.Create(&en).Error)
	s := trustSpeaker{Name: "s", Langs: []trustLang{en}}
	must(t, db.Clauses(hinted{OnShard(1)}).Omit("Langs.*").Create(&s).Error)
	distrustMap(t, e)
	for _, c := range []struct {
		name string
		run  func() error
	}{
		{"assoc delete", func() error { return db.Model(&trustSpeaker{ID: s.ID}).Association("Langs").Delete(&en) }},
		{"assoc clear", func() error { return db.Model(&trustSpeaker{ID: s.ID}).Association("Langs").Clear() }},
		{"table delete", func() error {
			return db.Clauses(hinted{ByID(s.ID)}).Table("trust_speaker_langs").Where("trust_speaker_id = ?", s.ID).Delete(nil).Error
		}},
		{"preload", func() error {
			var out []trustSpeaker
			return db.Clauses(hinted{ByID(s.ID)}).Preload("Langs").Find(&out).Error
		}},
	} {
		if err := c.run(); !errors.Is(err, ErrShardUnavailable) {
			t.Errorf("%s with the map distrusted: %v; want ErrShardUnavailable", c.name, err)
		}
	}
	_ = gorm.ErrRecordNotFound
}
