package charts

import (
	"context"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
)

// AzureTokenSource adapts an azcore credential (gitaso's Azure credential,
// workload identity included) to TokenSource.
func AzureTokenSource(cred azcore.TokenCredential) TokenSource {
	return TokenFunc(func(ctx context.Context, scopes []string) (string, error) {
		tok, err := cred.GetToken(ctx, policy.TokenRequestOptions{Scopes: scopes})
		if err != nil {
			return "", err
		}
		return tok.Token, nil
	})
}
