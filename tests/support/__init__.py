"""What the tests share beyond fixtures: pools of known truth, test sets generated from the
shared data, and made-up rates for plan's arithmetic. Benchmarks that measure on the same
sets import them from here."""
