from dlsched.cli import main

raise SystemExit(main())
