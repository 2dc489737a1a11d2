"""Tables and figures for people. matplotlib is imported only when a plot is drawn."""
