package engine

import "fmt"

// notClosed refuses, with ErrPluginNotOpen, what needs the plugin's
// databases once Close has begun (or a db.Use failed and closed it): the
// pools Close closes would otherwise answer with database/sql's "database
// is closed", which reads as if the application's own database were.
func (e *Engine) notClosed() error {
	switch {
	case !e.closed.Load():
		return nil
	case e.useFailed != nil:
		return fmt.Errorf("%w: db.Use failed: %w", ErrPluginNotOpen, e.useFailed)
	}
	return fmt.Errorf("%w: closed", ErrPluginNotOpen)
}
