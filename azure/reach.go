package azure

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"
)

// ReachTimeout bounds each request of Reachable.
const ReachTimeout = 5 * time.Second

// Reachable checks, before anything is planned, that Azure Resource Manager
// and Entra ID's authority answer at the cloud's endpoints: any HTTP answer
// counts (ARM answers an unauthenticated GET with 4xx), a connection that
// cannot be made or a TLS handshake that fails does not. The error names
// the endpoint, the setting it comes from and the cause, so that a wrong
// endpoint fails at once instead of after every retry of every request.
func (c Cloud) Reachable(ctx context.Context) error {
	client, err := c.HTTPClient()
	if err != nil {
		return err
	}
	defer client.CloseIdleConnections()
	check := func(what, url, setting string) error {
		ctx, cancel := context.WithTimeout(ctx, ReachTimeout)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return fmt.Errorf("%s endpoint %q (%s): %w", what, url, setting, err)
		}
		resp, err := client.Do(req)
		if err != nil {
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				err = fmt.Errorf("no answer within %s", ReachTimeout)
			}
			return fmt.Errorf("cannot reach %s at %s (%s): %w", what, url, setting, err)
		}
		resp.Body.Close()
		return nil
	}
	if err := check("Azure Resource Manager", c.ARMEndpoint, "armEndpoint of the cloud configuration, or GITASO_ARM_ENDPOINT"); err != nil {
		return err
	}
	return check("Entra ID", c.AuthorityHost, "authorityHost of the cloud configuration, or AZURE_AUTHORITY_HOST")
}
