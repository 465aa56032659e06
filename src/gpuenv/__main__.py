import sys

from gpuenv._entry import main

sys.exit(main())
