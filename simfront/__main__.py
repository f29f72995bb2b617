from simfront.cli import main

main()
