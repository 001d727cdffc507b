"""mongobench CLI."""
