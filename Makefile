# QueryFlux for Go. `make run` starts the embedded default; `make test` passes the tests.
GO        ?= go
BIN       := bin
FUZZTIME  ?= 5s
SEEDS     ?= 1000
REPLAY_SECS ?= 120
PARALLEL  ?= 2

.PHONY: replay-validate check-config run build qfsim test test-long test-deps test-deps-wire test-deps-ops test-deps-pgclients test-deps-studio tidy unit fuzz fuzz-long determinism sim bench bench-proxy chaos clean

run: build
	$(BIN)/queryflux serve

# The version --version prints: the checkout's revision (or a tag), unless VERSION is given.
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo devel)

build: qfsim
	$(GO) build -ldflags "-X main.version=$(VERSION)" -o $(BIN)/queryflux ./cmd/queryflux

# The simulator alone: the determinism stage runs it and nothing else (queryflux's link, with
# DuckDB in it, is as long again).
qfsim:
	@mkdir -p $(BIN)
	$(GO) build -o $(BIN)/qfsim ./cmd/qfsim

# The whole suite: unit, property and real-service tests, fuzz smoke, determinism across GOMAXPROCS.
test: test-deps tidy unit fuzz determinism

# Test clients that do not come with the database servers: PyMySQL (Debian's python3-pymysql, for
# the MySQL wire's autocommit test) and SQLAlchemy (python3-sqlalchemy, its reflection on PostgreSQL).
# Without apt (or root) the test that needs it skips, saying so.
test-deps: test-deps-wire test-deps-ops test-deps-pgclients test-deps-studio
	@/usr/bin/python3 -c 'import pymysql' 2>/dev/null || { echo "installing python3-pymysql"; \
		./scripts/apt-install.sh python3-pymysql || \
		echo "python3-pymysql could not be installed: TestPyMySQLDefaultAutocommitOff skips"; }
	@/usr/bin/python3 -c 'import sqlalchemy' 2>/dev/null || { echo "installing python3-sqlalchemy"; \
		./scripts/apt-install.sh python3-sqlalchemy || \
		echo "python3-sqlalchemy could not be installed: TestSQLAlchemyReflectsPostgreSQLThroughMySQL skips"; }

# Studio's browser tests drive Debian's chromium (internal/studio); without it they skip, saying so.
test-deps-studio:
	@command -v chromium >/dev/null 2>&1 || { echo "installing chromium"; \
		./scripts/apt-install.sh chromium || \
		echo "chromium could not be installed: the Studio browser tests skip"; }

# The wire frontends' client libraries: mysqlclient (python3-mysqldb), Django (python3-django,
# its MySQL backend's save of an unchanged row), MariaDB Connector/J (libmariadb-java, with the
# JDK test-deps-pgclients installs) and, from the lock file, node's mysql2 and trino-client. A
# test whose client could not be installed skips, saying so.
NODE_CLIENTS := internal/frontend/frontendtest/nodeclients
test-deps-wire:
	@[ -f /usr/share/java/mariadb-java-client.jar ] || { echo "installing libmariadb-java"; \
		./scripts/apt-install.sh libmariadb-java || \
		echo "libmariadb-java could not be installed: TestConnectorJAsMariaDB skips"; }
	@/usr/bin/python3 -c 'import MySQLdb' 2>/dev/null || { echo "installing python3-mysqldb"; \
		./scripts/apt-install.sh python3-mysqldb || \
		echo "python3-mysqldb could not be installed: the mysqlclient tests skip"; }
	@/usr/bin/python3 -c 'import django' 2>/dev/null || { echo "installing python3-django"; \
		./scripts/apt-install.sh python3-django || \
		echo "python3-django could not be installed: TestDjangoSavesAnUnchangedRowAsOnMariaDB skips"; }
	@command -v npm >/dev/null 2>&1 || { echo "installing nodejs and npm"; \
		./scripts/apt-install.sh nodejs npm || \
		echo "npm could not be installed: the mysql2 and trino-client tests skip"; }
	@test -d $(NODE_CLIENTS)/node_modules/mysql2 -a -d $(NODE_CLIENTS)/node_modules/trino-client || \
		{ echo "installing node clients (mysql2, trino-client)"; \
		(cd $(NODE_CLIENTS) && npm ci --no-audit --no-fund >/dev/null 2>&1) || \
		echo "npm ci in $(NODE_CLIENTS) failed: the mysql2 and trino-client tests skip"; }

# The PostgreSQL client libraries the pgwire client tests run (internal/frontend/pgwire/clients_test.go):
# psycopg2 and psycopg 3, the JDBC driver and a JDK from Debian, node-postgres and Sequelize from npm
# (pinned by package-lock.json). A client that cannot be installed is reported here, and its test fails naming it.
PG_CLIENTS_DIR := internal/frontend/pgwire/testdata/clients
test-deps-pgclients:
	@missing=""; \
	/usr/bin/python3 -c 'import psycopg2' 2>/dev/null || missing="$$missing python3-psycopg2"; \
	/usr/bin/python3 -c 'import psycopg' 2>/dev/null || missing="$$missing python3-psycopg"; \
	[ -f /usr/share/java/postgresql.jar ] || missing="$$missing libpostgresql-jdbc-java"; \
	command -v javac >/dev/null 2>&1 || missing="$$missing default-jdk-headless"; \
	command -v node >/dev/null 2>&1 || missing="$$missing nodejs"; \
	command -v npm >/dev/null 2>&1 || missing="$$missing npm"; \
	if [ -n "$$missing" ]; then echo "installing$$missing"; \
		./scripts/apt-install.sh $$missing || \
		echo "could not install$$missing: the pgwire client tests that need them fail, naming them"; fi
	@[ -d $(PG_CLIENTS_DIR)/node_modules/pg -a -d $(PG_CLIENTS_DIR)/node_modules/sequelize \
		-a -d $(PG_CLIENTS_DIR)/node_modules/typeorm -a -d $(PG_CLIENTS_DIR)/node_modules/knex ] || \
		{ echo "installing node-postgres, Sequelize, TypeORM and Knex (npm ci in $(PG_CLIENTS_DIR))"; \
		(cd $(PG_CLIENTS_DIR) && npm ci --no-audit --no-fund >/dev/null 2>&1) || \
		echo "npm ci failed in $(PG_CLIENTS_DIR): TestClientNodePostgres, TestSequelizeInTransactionPoolMode, TestTypeORMAppFlowOnDuckDB and TestKnexFlowOnDuckDB fail, naming it"; }

# promtool (Debian's prometheus package) checks the alert rules in deploy/observability.
test-deps-ops:
	@command -v promtool >/dev/null 2>&1 || { echo "installing prometheus (for promtool)"; \
		./scripts/apt-install.sh --no-install-recommends prometheus || \
		echo "prometheus could not be installed: TestPromtoolChecksRules skips"; }

# Every database the tests create carries this run's tag; the run fails if one is left behind.
# Expanded once (:=): a recursive ?= ran date at each use, so the leftovers check after the tests
# looked for a tag seconds or minutes later than the one the tests' databases carried, and found none.
ifndef TEST_RUN
TEST_RUN := r$(shell date +%s)
endif

# Packages tested at once: the slowest (chaos, fleettest, querytest) mostly wait on real daemons, so
# a third package keeps the CPUs busy. .ci/run raises the servers' connection limits to match.
TEST_PACKAGES_AT_ONCE ?= 3

# The packages whose tests take longest, slowest first, named before ./... (go test lists each
# package once, at its first mention, and builds and starts them in that order). In ./...'s own
# order pgwire and mysqlwire, the two longest, are the 35th and 36th of 110 packages; started
# first, the short packages fill the slots at the end instead of waiting ahead of them.
SLOW_TEST_PACKAGES ?= ./internal/frontend/pgwire ./internal/frontend/mysqlwire ./fleettest ./deploy \
	./internal/frontend/trinohttp ./querytest ./internal/engine/duckengine ./chaos ./scenarios \
	./internal/capacity/pgcapacity ./internal/studio ./configtest

# go vet ./... has run every analyzer over every package and its tests, so go test's own vet (a
# subset of the same analyzers, run again per test package) is off: it only repeated the work.
unit:
	$(GO) vet ./...
	QUERYFLUX_TEST_RUN=$(TEST_RUN) $(GO) test -vet=off -count=1 -p $(TEST_PACKAGES_AT_ONCE) -timeout 12m $(SLOW_TEST_PACKAGES) ./...
	QUERYFLUX_TEST_RUN=$(TEST_RUN) $(GO) run ./internal/pgtest/leftovers

# The long tests make test leaves out (internal/testlong: each names the test that keeps a smoke
# of its capability in make test), and the long counts of the tests that draw fewer seeds or rapid
# cases in make test. `go run ./internal/testlong/list` lists them.
test-long:
	@pkgs=$$($(GO) run ./internal/testlong/list packages) && run=$$($(GO) run ./internal/testlong/list run) && \
	echo "QUERYFLUX_TEST_LONG=1 go test -run '$$run' $$pkgs" && \
	QUERYFLUX_TEST_LONG=1 QUERYFLUX_TEST_RUN=$(TEST_RUN) $(GO) test -count=1 -p $(TEST_PACKAGES_AT_ONCE) -timeout 40m -run "$$run" $$pkgs
	QUERYFLUX_TEST_RUN=$(TEST_RUN) $(GO) run ./internal/pgtest/leftovers

# Each fuzz target runs for $(FUZZTIME): long enough to catch shallow crashes, short enough for CI.
# make test fuzzes the targets whose instrumented test binaries build in seconds; the others'
# binaries (the wire frontends', the worker API's, config's: every dependency instrumented, about
# 50 s each to build on 2 cores) are fuzzed by `make fuzz-long`. Every target's seed corpus runs in
# make test either way: go test runs a fuzz target's seeds as a test.
FUZZ_TARGETS := \
	./internal/frontend/trinohttp:FuzzTrinoAuth \
	./internal/frontend/trinohttp:FuzzTrinoRequest \
	./internal/frontend/trinohttp:FuzzTrinoHeaders \
	./internal/frontend/flightsql:FuzzFlightAuth \
	./internal/frontend/flightsql:FuzzFlightCommands \
	./internal/sqltok:FuzzTokenize \
	./internal/sqltok:FuzzSplitAndCount \
	./internal/history:FuzzDecodeBatch
FUZZ_TARGETS_LONG := \
	./node/workerapi:FuzzDecodeHeartbeat \
	./internal/config:FuzzParse \
	./internal/frontend/pgwire:FuzzPGWireMessages \
	./internal/frontend/pgwire:FuzzPGWireAuth \
	./internal/frontend/mysqlwire:FuzzMySQLAuth \
	./internal/frontend/mysqlwire:FuzzMySQLPackets
FUZZTIME_LONG ?= 1m

# A failure counts only for an input that fails again when run on its own: the engine's own
# hiccups (see scripts/fuzz-smoke.sh) are run again.
fuzz:
	@GO=$(GO) scripts/fuzz-smoke.sh $(FUZZTIME) $(FUZZ_TARGETS)

# Every fuzz target for $(FUZZTIME_LONG) (about 15 minutes with the builds).
fuzz-long:
	@GO=$(GO) scripts/fuzz-smoke.sh $(FUZZTIME_LONG) $(FUZZ_TARGETS_LONG) $(FUZZ_TARGETS)

# Every scenario file, at two seeds, must give the same trace hashes under GOMAXPROCS 1 and 2
# (seeds run two at a time in the second, so runs sharing a process cannot leak into each other;
# and the Go scheduler is yielded at random at every task switch, so code that escaped the
# simulator runs at other moments).
DET_SEED ?= 7
# Scenarios checked at a time (scripts/determinism.sh): one per core.
DET_JOBS ?= 2
determinism: qfsim
	@scripts/determinism.sh $(BIN)/qfsim $(DET_SEED) $(DET_JOBS) scenarios/*.yaml

# Every scenario over $(SEEDS) seeds (the 1,000-worker planning fleet over 20), and the
# simulator's rapid property tests with many more draws.
sim: build
	@set -e; for f in scenarios/*.yaml; do \
		n=$(SEEDS); case $$f in *plan-fleet*) n=20;; esac; \
		echo "== $$f ($$n seeds)"; $(BIN)/qfsim run $$f --seeds $$n --parallel $(PARALLEL); \
	done
	QFSIM_RAPID_CHECKS=1000 $(GO) test -count=1 -run '^TestLeaseCapsUnderRapidFaults$$' ./scenarios/

# Every scenario file against real processes next to the simulator (about 45 minutes): the
# headline metrics of every file, simulated and real, end the output as one Markdown table
# (RESULTS.md carries it).
TIME_SCALE ?= 0.2
# A recorded real workload replayed in the simulator (long form of the smoke in make test).
replay-validate:
	scripts/replay-validate.sh $(REPLAY_SECS)

# Every file but pingpong.yaml (the simulator's own test role: no QueryFlux process runs it) and
# plan-fleet.yaml (1,001 nodes: a planning fleet, not a real one); a part real processes cannot
# do fails the run.
CHAOS_FILES := $(filter-out scenarios/pingpong.yaml scenarios/plan-fleet.yaml,$(wildcard scenarios/*.yaml)) $(wildcard chaos/testdata/*.yaml)
chaos: build
	$(BIN)/qfsim chaos $(CHAOS_FILES) --time-scale $(TIME_SCALE) --bin $(BIN)/queryflux --compare

# Simulator speed: task switches per second, virtual seconds per wall second of 100 and 1,000
# workers heartbeating for one virtual hour (stand-in loop and the real roles), and plan-fleet's
# load at 1,000 workers and at 10,000 (caps grown with the fleet) with a met/not-met line for each
# goal, and at 3,000 workers over capacity. Each is one command, e.g.
#   qfsim run scenarios/plan-fleet.yaml --workers 10000 --cap 400
bench:
	$(GO) test -run='^$$' -bench=TaskSwitch ./sim/
	$(GO) test -run='^$$' -bench='HeartbeatHour|FleetHour' -benchtime=1x ./sim/
	$(GO) test -run='^$$' -bench='PlanFleet' -benchtime=1x -timeout 2h ./sim/

clean:
	rm -rf $(BIN)

# Proxy overhead side by side: direct, PgBouncer, passthrough, Arrow path, worker (installs pgbouncer).
bench-proxy: build
	./scripts/bench-proxy.sh

# go.mod and go.sum must be exactly what `go mod tidy` writes.
tidy:
	@$(GO) mod tidy -diff || { echo "go.mod/go.sum differ from go mod tidy: run it and commit"; exit 1; }

# A configuration's caps under many drawn fault timelines (CONFIG=path; the smoke is in make test).
CONFIG ?= internal/defaultconfig/default.yaml
CHECKS ?= 1000
check-config: build
	$(BIN)/qfsim check $(CONFIG) --checks $(CHECKS) --junit qfsim-check.xml
