def main() -> None:
    raise SystemExit("mongobench-runner: not built yet")
