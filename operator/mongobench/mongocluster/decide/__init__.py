"""Pure decisions: observations in, what to do next out (statuses, plans, requeue times; no API
calls, no MongoDB; the time is passed in)."""
