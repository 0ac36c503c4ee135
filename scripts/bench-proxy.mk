# Include from the Makefile (include scripts/bench-proxy.mk) or copy the target.
.PHONY: bench-proxy
bench-proxy: ## proxy overhead vs PgBouncer and direct (PostgreSQL, MySQL wire); ~2-3 min
	./scripts/bench-proxy.sh
