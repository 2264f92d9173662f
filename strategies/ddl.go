package strategies

import "context"

// runDDL runs the statements that create a strategy's tables: in one
// transaction when transactional and conn can begin one, so that two
// processes starting at once serialize on the dialect's lock (PostgreSQL's
// advisory lock), otherwise one by one.
func runDDL(ctx context.Context, conn Conn, statements []string, transactional bool) error {
	beginner, ok := conn.(txBeginner)
	if !ok || !transactional {
		for _, ddl := range statements {
			if _, err := conn.ExecContext(ctx, ddl); err != nil {
				return err
			}
		}
		return nil
	}
	tx, err := beginner.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }()
	for _, ddl := range statements {
		if _, err := tx.ExecContext(ctx, ddl); err != nil {
			return err
		}
	}
	return tx.Commit()
}
