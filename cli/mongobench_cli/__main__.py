from mongobench_cli.app import main

main()
