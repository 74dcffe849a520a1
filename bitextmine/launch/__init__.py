"""Running stages at scale: launchers, planning, environment checks."""
