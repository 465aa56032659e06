import sys

from gpuenv.cli import main

sys.exit(main())
