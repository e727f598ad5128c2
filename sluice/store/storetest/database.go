package storetest

import (
	"os"
	"testing"
)

// DatabaseURL finds the test database for a PostgreSQL test. Without one
// the PostgreSQL tier cannot run: in CI that is a failure (a green build must
// mean the tier ran), on a laptop a skip that says how to get one.
func DatabaseURL(t testing.TB) string {
	t.Helper()
	url := os.Getenv("DATABASE_URL")
	if url != "" {
		return url
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("DATABASE_URL is unset and CI=true: the PostgreSQL tier must run in CI (start one with: eval \"$(.ci/postgres.sh start)\")")
	}
	t.Skip("DATABASE_URL unset: skipping the PostgreSQL tier (start a throwaway cluster with: eval \"$(.ci/postgres.sh start)\")")
	return ""
}
