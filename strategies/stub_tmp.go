package strategies

import "context"

func (s *Segment) Forget(database string)             {}
func (s *Snowflake) SetFloor(from, to int, tick int64) {}

func (g *Instagram) Advance(ctx context.Context, source, target Target, atLeast int64) error {
	return nil
}
func (s *Segment) Advance(ctx context.Context, source, target Target, atLeast int64) error {
	return nil
}
