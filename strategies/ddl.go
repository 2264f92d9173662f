package strategies

import "context"

// autocommitQuery reads, on MySQL/MariaDB, whether a connection commits each
// statement on its own.
const autocommitQuery = "SELECT @@autocommit"

// requireAutocommit fails with ErrNoAutocommit when conn, a pool, hands out
// connections that do not commit each statement on their own: the
// strategies' reservations and leases are statements outside a transaction,
// and must be seen by every process once they return. query is the
// dialect's autocommitQuery, or empty where autocommit cannot be off. A
// transaction commits its statements itself, and is not asked.
func requireAutocommit(ctx context.Context, conn Conn, query string) error {
	if query == "" || isTransaction(conn) {
		return nil
	}
	var on int64
	if err := conn.QueryRowContext(ctx, query).Scan(&on); err != nil {
		return err
	}
	if on == 0 {
		return ErrNoAutocommit
	}
	return nil
}

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
