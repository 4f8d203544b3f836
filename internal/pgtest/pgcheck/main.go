// Command pgcheck tells make test whether the PostgreSQL tests will run:
// it prints a loud notice when no server answers, and exits 1 then if
// STEPWISE_REQUIRE_POSTGRES=1.
package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/stepwise-agent/stepwise/internal/pgtest"
	"github.com/stepwise-agent/stepwise/store/postgres"
)

func main() {
	_, ok, why := postgres.TestURL()
	if ok {
		fmt.Println("PostgreSQL: the server answers; the PostgreSQL tests run.")
		return
	}
	bar := strings.Repeat("!", 78)
	fmt.Fprintf(os.Stderr, "%s\nPostgreSQL NOT TESTED: no server answers (%s).\n"+
		"The PostgreSQL store's tests and the CLI's and server's tests on it will SKIP.\n"+
		"Start one (pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main start)\n"+
		"or point STEPWISE_TEST_POSTGRES at one (a URL whose role may CREATE SCHEMA).\n%s\n", bar, why, bar)
	if pgtest.Required() {
		fmt.Fprintln(os.Stderr, "STEPWISE_REQUIRE_POSTGRES=1: failing.")
		os.Exit(1)
	}
}
