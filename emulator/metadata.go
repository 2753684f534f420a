package emulator

import (
	"encoding/json"
	"net/http"
	"strings"
)

// ARM's cloud metadata endpoint (GET {arm}/metadata/endpoints?api-version=...), which clients read to configure a
// cloud from its Resource Manager endpoint alone (`az cloud register --endpoint-resource-manager`, msrestazure's
// get_cloud_from_metadata_endpoint, the Azure SDKs' cloud discovery). ARM answers three shapes by api-version:
//
//   - 2015-01-01 (what msrestazure asks for): galleryEndpoint, graphEndpoint, portalEndpoint and authentication
//     (loginEndpoint, audiences);
//   - 2019-05-01: a JSON array of clouds, each with a name and the full set of endpoints and suffixes;
//   - 2022-09-01 and later: one cloud object, the full set.
//
// The emulator's cloud has its own address as Resource Manager, the real ARM audiences, and the public cloud's
// data-plane suffixes (of which it serves Key Vault's). Its login endpoint is an ADFS authority ({base}/adfs,
// identityProvider ADFS, tenant adfs), as a disconnected Azure Stack Hub's metadata names it: MSAL validates no
// ADFS authority with login.microsoftonline.com, so a client configured from this document alone signs in offline.
// The same tenant also answers at {base}/{tenant} as Entra ID does (azidentity, gitaso's cloud.json).

// isMetadataPath reports whether path is /metadata/endpoints (also with the doubled slash a client makes of an
// endpoint ending in "/").
func isMetadataPath(path string) bool {
	return strings.EqualFold(strings.Trim(path, "/"), "metadata/endpoints")
}

// metadataCloudName is the name the 2019-05-01 list gives the emulator's cloud.
const metadataCloudName = "GitasoEmulator"

func (e *Emulator) metadataCloud() map[string]any {
	base := e.base + "/"
	return map[string]any{
		"portal":                  "https://portal.azure.com",
		"authentication":          map[string]any{"loginEndpoint": e.base + "/adfs", "audiences": []string{"https://management.core.windows.net/", "https://management.azure.com/"}, "tenant": "adfs", "identityProvider": "ADFS"},
		"media":                   "https://rest.media.azure.net",
		"graphAudience":           "https://graph.windows.net/",
		"graph":                   "https://graph.windows.net/",
		"name":                    metadataCloudName,
		"suffixes":                metadataSuffixes(),
		"batch":                   "https://batch.core.windows.net/",
		"resourceManager":         base,
		"vmImageAliasDoc":         "https://raw.githubusercontent.com/Azure/azure-rest-api-specs/master/arm-compute/quickstart-templates/aliases.json",
		"activeDirectoryDataLake": "https://datalake.azure.net/",
		"sqlManagement":           "https://management.core.windows.net:8443/",
		"gallery":                 "https://gallery.azure.com/",
		// The 2022-09-01 names of the data-plane audiences.
		"microsoftGraphResourceId":              "https://graph.microsoft.com/",
		"appInsightsResourceId":                 "https://api.applicationinsights.io",
		"appInsightsTelemetryChannelResourceId": "https://dc.applicationinsights.azure.com/v2/track",
		"attestationResourceId":                 "https://attest.azure.net",
		"synapseAnalyticsResourceId":            "https://dev.azuresynapse.net",
		"logAnalyticsResourceId":                "https://api.loganalytics.io",
		"ossrDbmsResourceId":                    "https://ossrdbms-aad.database.windows.net",
	}
}

func metadataSuffixes() map[string]any {
	return map[string]any{
		"azureDataLakeStoreFileSystem":        "azuredatalakestore.net",
		"acrLoginServer":                      "azurecr.io",
		"sqlServerHostname":                   "database.windows.net",
		"azureDataLakeAnalyticsCatalogAndJob": "azuredatalakeanalytics.net",
		"keyVaultDns":                         "vault.azure.net",
		"storage":                             "core.windows.net",
		"azureFrontDoorEndpointSuffix":        "azurefd.net",
		"storageSyncEndpointSuffix":           "afs.azure.net",
		"mhsmDns":                             "managedhsm.azure.net",
		"mysqlServerEndpoint":                 "mysql.database.azure.com",
		"postgresqlServerEndpoint":            "postgres.database.azure.com",
		"mariadbServerEndpoint":               "mariadb.database.azure.com",
		"synapseAnalytics":                    "dev.azuresynapse.net",
		"attestationEndpoint":                 "attest.azure.net",
	}
}

// serveMetadata answers GET /metadata/endpoints. It needs no token, as ARM's does not.
func (e *Emulator) serveMetadata(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		writeARMError(w, http.StatusMethodNotAllowed, "MethodNotAllowed", "The requested method is not allowed on /metadata/endpoints.")
		return
	}
	v := r.URL.Query().Get("api-version")
	switch {
	case v == "":
		writeARMError(w, http.StatusBadRequest, "MissingApiVersionParameter", "The api-version query parameter (?api-version=) is required for all requests.")
	case v == "2015-01-01" || v == "1.0":
		c := e.metadataCloud()
		writeJSON(w, http.StatusOK, map[string]any{
			"galleryEndpoint": c["gallery"], "graphEndpoint": c["graph"], "portalEndpoint": c["portal"],
			"authentication": map[string]any{"loginEndpoint": e.base + "/adfs", "audiences": []string{"https://management.core.windows.net/", "https://management.azure.com/"}},
		})
	case v == "2019-05-01":
		writeJSON(w, http.StatusOK, []any{e.metadataCloud()})
	case validAPIVersion(v) && v >= "2019-05-01":
		writeJSON(w, http.StatusOK, e.metadataCloud())
	default:
		writeARMError(w, http.StatusBadRequest, "InvalidApiVersionParameter", "The api-version '"+v+"' is invalid. The supported versions are '2022-09-01,2019-05-01,2015-01-01'.")
	}
}

// AzureCLICloudConfig is the --cloud-config of `az cloud register` for an emulator at armEndpoint: Resource Manager
// (the CLI reads the login endpoint and audiences from its /metadata/endpoints), plus what the CLI's 2.45 Key Vault
// commands check and the metadata endpoint cannot tell it: the vault DNS suffix and Microsoft Graph's resource ID
// (`az keyvault create` builds a Graph client even when it will not call it).
func AzureCLICloudConfig(armEndpoint string) string {
	b, _ := json.Marshal(map[string]any{
		"endpoints": map[string]any{"resourceManager": strings.TrimSuffix(armEndpoint, "/") + "/", "microsoftGraphResourceId": "https://graph.microsoft.com/"},
		"suffixes":  map[string]any{"keyvaultDns": ".vault.azure.net"},
	})
	return string(b)
}
