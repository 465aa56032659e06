"""Reading a package index: pip's index URL, project pages, byte ranges, file sizes."""
