package engine

import (
	"errors"
	"fmt"
)

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

// closedUnder names a failure of work that Close cut short (a strategy's
// reservation it cancelled, a pool it closed under a call) as the plugin
// closed, the error a statement begun after Close gets.
func (e *Engine) closedUnder(name string, err error) error {
	if err == nil || !e.closed.Load() || errors.Is(err, ErrShardUnavailable) {
		return err
	}
	return fmt.Errorf("%w: %s: the plugin is closed: %w", ErrShardUnavailable, name, err)
}
