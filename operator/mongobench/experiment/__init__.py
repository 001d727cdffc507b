"""BenchmarkExperiment: a matrix of cluster variants x run variants x repetitions, in three
folders by what a module may do: build/ (pure: the objects of its cells), decide/ (pure: the
matrix and its order, the schedule's rules, when to look again), act/ (I/O: the reconcile, the
summary's archive, the history)."""
