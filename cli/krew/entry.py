"""The entry point PyInstaller bundles into the self-contained `kubectl-mongobench` executable
(cli/release.sh): the same `main` as the pip-installed `mongobench` and `kubectl-mongobench`."""

from mongobench_cli.app import main

main()
