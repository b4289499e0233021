"""One bookie process: storage engine, network server, registration, disk checks, HTTP admin."""
