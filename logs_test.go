package shardid

import (
	"bytes"
	"fmt"
	"log"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"gorm.io/gorm/logger"
)

type logUser struct {
	ID     int64 `shardid:""`
	Name   string
	Photos []logPhoto `gorm:"foreignKey:UserID"`
}

type logPhoto struct {
	ID     int64 `shardid:"colocate:UserID"`
	UserID int64
}

// here is the file and line it is called from.
func here() string {
	_, file, line, _ := runtime.Caller(1)
	return fmt.Sprintf("%s:%d", filepath.Base(file), line)
}

// TestLogLines captures GORM's logger: each statement's line names the
// physical database it ran on (Config.LogPhysical), a statement over several
// databases names each part's, and every line points at the caller's file
// and line, not at the plugin's.
func TestLogLines(t *testing.T) {
	db, p, _, _ := revRoutedN(t, 3, &logUser{}, &logPhoto{})
	p.config.LogPhysical = true
	var out bytes.Buffer
	db.Logger = logger.New(log.New(&out, "", 0), logger.Config{LogLevel: logger.Info, Colorful: false})
	lineOf := func(run func() string) string {
		out.Reset()
		where := run()
		lines := strings.Split(strings.TrimSpace(out.String()), "\n")
		for i, l := range lines {
			if strings.Contains(l, where) && i+1 < len(lines) {
				return l + " " + lines[i+1] // the default logger writes the place, then the SQL
			}
		}
		t.Fatalf("no line from %s in:\n%s", where, out.String())
		return ""
	}
	users := []logUser{{Name: "a"}, {Name: "b"}, {Name: "c"}}
	for i, s := range []int{10, 3000, 6000} {
		must(t, db.Clauses(OnShard(s)).Create(&users[i]).Error)
	}
	for _, c := range []struct {
		what string
		run  func() string
		want []string
	}{
		{"first by ID", func() string {
			var u logUser
			err, where := db.First(&u, users[1].ID).Error, here()
			must(t, err)
			return where
		}, []string{"[s1] SELECT"}},
		{"create", func() string {
			err, where := db.Clauses(OnShard(6001)).Create(&logUser{Name: "d"}).Error, here()
			must(t, err)
			return where
		}, []string{"[s2] INSERT"}},
		{"fan-out query", func() string {
			var all []logUser
			err, where := db.Clauses(AllShards()).Find(&all).Error, here()
			must(t, err)
			return where
		}, []string{"[s0] SELECT", "[s1] SELECT", "[s2] SELECT"}},
		{"fan-out update", func() string {
			err, where := db.Model(&logUser{}).Clauses(AllShards()).Where("name = ?", "zzz").Update("name", "y").Error, here()
			must(t, err)
			return where
		}, []string{"[s0] UPDATE", "[s1] UPDATE", "[s2] UPDATE"}},
		{"split create", func() string {
			two := []logUser{{ID: p.Layout().Compose(p.Layout().Epoch.AddDate(1, 0, 0), 11, 0), Name: "e"}, {ID: p.Layout().Compose(p.Layout().Epoch.AddDate(1, 0, 0), 6002, 0), Name: "f"}}
			err, where := db.Create(&two).Error, here()
			must(t, err)
			return where
		}, []string{"[s0] INSERT", "[s2] INSERT"}},
		{"fan-out with preload", func() string {
			var all []logUser
			err, where := db.Clauses(AllShards()).Preload("Photos").Find(&all, []int64{users[0].ID, users[2].ID}).Error, here()
			must(t, err)
			return where
		}, []string{"[s0] SELECT * FROM `log_users`", "[s2] SELECT * FROM `log_users`", "[s0] SELECT * FROM `log_photos`", "[s2] SELECT * FROM `log_photos`"}},
	} {
		line := lineOf(c.run)
		for _, w := range c.want {
			if !strings.Contains(line, w) {
				t.Errorf("%s: %q not in its line %q", c.what, w, line)
			}
		}
		for _, own := range []string{"fanout.go", "querypart.go", "callbacks.go", "route.go"} {
			if strings.Contains(out.String(), own) {
				t.Errorf("%s: a line points at the plugin's %s:\n%s", c.what, own, out.String())
			}
		}
	}
}
