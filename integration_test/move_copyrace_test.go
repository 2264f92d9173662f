package integration

import (
	"context"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/shardid/shardid"
)

// waitForALockWait waits until a session of db waits for a row lock another
// holds, as the database tells (MariaDB 10.11 lists an autocommit write
// waiting so in no innodb_trx row: its process list shows it running an
// INSERT, which the lock holds).
func waitForALockWait(t *testing.T, b backend, db *gorm.DB) {
	t.Helper()
	query := "SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid WHERE NOT l.granted AND a.datname = current_database()"
	if b.name == "mariadb" {
		query = "SELECT count(*) FROM information_schema.processlist WHERE db = DATABASE() AND id <> CONNECTION_ID() AND command IN ('Query', 'Execute') AND info LIKE 'INSERT INTO%'"
	}
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		var n int64
		must(t, db.Raw(query).Scan(&n).Error)
		if n > 0 {
			return
		}
	}
	t.Error("no session waited for a lock")
}

// TestMoveCopyWritesAChunkRefusedForAMissingParentAsTheSourceHasItNow: a
// chunk of books the copy read holds a book whose writer was made after the
// writers' copy, and a book updated after the chunk was read (while its
// write on the target waited). The target refuses the chunk for the missing
// writer, the change log is replayed (the updated book written as it is
// now, its change forgotten), and the chunk is written again: as the source
// has its rows now, not as the chunk read them, or the update would be lost
// on the target and the cutover's check would fail the move each time it
// ran again.
func TestMoveCopyWritesAChunkRefusedForAMissingParentAsTheSourceHasItNow(t *testing.T) {
	withForeignKey(t, []any{&FkWriter{}, &FkBook{}}, "ALTER TABLE fk_books ADD CONSTRAINT fk_books_writer FOREIGN KEY (writer_id) REFERENCES fk_writers(id)",
		func(t *testing.T, b backend, r *moveRig, cascade bool) {
			if cascade {
				t.Skip("nothing is deleted")
			}
			models := append([]any{&FkWriter{}, &FkBook{}}, moveModels...)
			writer := FkWriter{Name: "w"}
			must(t, r.db.Clauses(shardid.OnShard(movingRange.From)).Create(&writer).Error)
			book := FkBook{WriterID: writer.ID, Title: "read by the copy"}
			must(t, r.db.Create(&book).Error)
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			var blocker *gorm.DB
			done := make(chan struct{})
			_, err := r.p.Move(ctx, shardid.Move{Logical: movingRange, To: b.name + "-target", Models: models,
				Progress: func(p shardid.MoveProgress) {
					if p.Phase != shardid.PhaseCopy || p.Table != "fk_writers" || blocker != nil {
						return
					}
					// a writer the writers' copy did not read, and a book of it
					later := FkWriter{Name: "later"}
					must(t, r.db.Clauses(shardid.OnShard(movingRange.From+1)).Create(&later).Error)
					must(t, r.db.Create(&FkBook{WriterID: later.ID, Title: "of the later writer"}).Error)
					// the book's write on the target waits for this transaction
					blocker = r.target.Begin()
					must(t, blocker.Exec("INSERT INTO fk_books (id, writer_id, title) VALUES (?, ?, ?)", book.ID, writer.ID, "blocker").Error)
					go func() {
						defer close(done)
						defer blocker.Rollback()
						waitForALockWait(t, b, r.target)
						must(t, r.db.Model(&FkBook{}).Where("id = ?", book.ID).UpdateColumn("title", "read by the copy, then updated").Error)
					}()
				}})
			if blocker == nil {
				t.Fatal("the writers' copy reported no chunk")
			}
			<-done
			if err != nil {
				t.Errorf("move: %v", err)
				must(t, r.p.CancelMove(ctx, movingRange))
				return
			}
			var title string
			must(t, r.target.Raw("SELECT title FROM fk_books WHERE id = ?", book.ID).Scan(&title).Error)
			if title != "read by the copy, then updated" {
				t.Errorf("the book on the target reads %q, want the update made during the copy", title)
			}
			compareSides(t, r, []fpTable{{"fk_books", "id"}, {"fk_writers", "id"}})
			must(t, r.p.CleanupMove(ctx, movingRange))
		})
}
