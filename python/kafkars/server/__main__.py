from kafkars.server.cli import main

main()
