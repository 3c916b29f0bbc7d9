package fleet

import (
	"context"
	neturl "net/url"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sif-dev/sif/daemon/fleet/pgtest"
)

// Publishing over TLS with the server's certificate checked (sslmode
// verify-full and the CA that signed it), as the operator's guide
// documents; a client that trusts another CA is refused.
func TestPublishOverVerifiedTLS(t *testing.T) {
	srv := pgtest.Start(t, &pgtest.Options{TLS: true})
	url := srv.TCPURL("postgres")
	if !strings.Contains(url, "sslmode=verify-full") {
		t.Fatalf("the TLS URL %q does not ask for verify-full", url)
	}
	pool := newPool(t, url)
	a := newTestHost(t, pool, "alpha", "/a")
	for _, p := range []string{"/a/x", "/a/y"} {
		a.put(t, p, p)
	}
	a.drain(t)
	a.mustMatch(t, pool)

	// The same URL trusting a CA that did not sign the server's
	// certificate: the publisher's connection fails, and says why.
	other := pgtest.Start(t, &pgtest.Options{TLS: true})
	bad := strings.Replace(url, neturl.QueryEscape(srv.CAFile()), neturl.QueryEscape(other.CAFile()), 1)
	if bad == url {
		t.Fatalf("the TLS URL %q does not name its CA file", url)
	}
	badPool, err := pgxpool.New(context.Background(), bad)
	if err != nil {
		t.Fatal(err)
	}
	defer badPool.Close()
	b := newTestHost(t, badPool, "beta", "/b")
	b.put(t, "/b/x", "x")
	_, err = b.pub.round(context.Background())
	if err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("publishing to a server whose certificate the client's CA did not sign: %v", err)
	}
}
