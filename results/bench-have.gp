have_live = 1
have_micro = 1
have_sources = 1
have_rules = 1
have_prefixes = 1
have_lsrc = 1
have_daemon = 1
