"""The package's version: libfz's (fz_version() in lib/version.c), kept
here as a literal so that packaging tools read it without loading the
library; a test checks that the two agree."""

__version__ = "0.1.0"
