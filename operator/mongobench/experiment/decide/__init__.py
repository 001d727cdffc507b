"""Pure: what an experiment does next (its matrix and order, the schedule's rules, when to
look again)."""
