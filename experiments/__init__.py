"""frictionsim experiments: the command-line runner and the experiments it runs."""
