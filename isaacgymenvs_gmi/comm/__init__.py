"""Communication between GMIs: layout-aware gradient reduction (paper Sec. 4.1)."""
