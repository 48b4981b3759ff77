"""Drop-in surfaces for code written against other libraries' APIs (dgbdt.compat.xgboost)."""
