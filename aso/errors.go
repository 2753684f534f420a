package aso

import (
	"regexp"
	"strings"
)

// Every rule classifying ARM errors lives here: the generic classification
// of an error code (fatalCodes, ClassifyCode) and ASO's per-kind error
// classifiers (below); the azure client and the executor call these.

// fatalCodes are the ARM error codes ASO classifies as fatal: no retry can
// succeed until the desired state changes. See
// shared/conformance/aso/conversion-rules.md §8. BadRequest and an unknown
// code on HTTP 400 are retried (slowly) there, not fatal.
var fatalCodes = map[string]bool{
	"InvalidParameter":                           true,
	"InvalidParameterValue":                      true,
	"InvalidResourceGroupLocation":               true,
	"InvalidResourceType":                        true,
	"InvalidRequestContent":                      true,
	"InvalidTemplate":                            true,
	"InvalidValuesForRequestParameters":          true,
	"InvalidGatewaySkuProvidedForGatewayVpnType": true,
	"InvalidGatewaySize":                         true,
	"LocationRequired":                           true,
	"MethodNotAllowed":                           true,
	"MissingRequiredParameter":                   true,
	"PasswordTooLong":                            true,
	"PrivateIPAddressInReservedRange":            true,
	"PrivateIPAddressNotInSubnet":                true,
	"PropertyChangeNotAllowed":                   true,
	"PublicIpForGatewayIsRequired":               true,
	"RegionIsOfferRestricted":                    true,
	"RequestDisallowedByPolicy":                  true,
	"ReservedResourceName":                       true,
	"SkuNotAvailable":                            true,
	"SubscriptionNotFound":                       true,
	// api-version problems never fix themselves.
	"MissingApiVersionParameter": true,
	"InvalidApiVersionParameter": true,
	// A role assignment's role or principal cannot change in place.
	"RoleAssignmentUpdateNotPermitted": true,
}

// ClassifyCode is ASO's generic classification of an ARM error code, the
// one every kind shares: Fatal for fatalCodes, Retryable otherwise.
func ClassifyCode(code string) Classification {
	if fatalCodes[code] {
		return Fatal
	}
	return Retryable
}

// Classify is ASO's classification of an ARM error for a kind: the generic
// one (ClassifyCode), then the kind's own classifier (below), if any.
func Classify(group, kind string, e CloudError) Classification {
	return ClassifyError(group, kind, e, ClassifyCode(e.Code))
}

// ASO's per-kind error classifiers (the ClassifyError extensions in
// api/*/customizations): ARM errors that one kind turns retryable (a
// dependency still being created) or fatal (a password ARM will never
// accept). Each applies after the generic classification and changes it
// only when its condition matches, exactly as ASO's code does.

func init() {
	classifiers := map[string]func(CloudError) (Classification, bool){
		"app.azure.com/ContainerApp":                             codeIs(Retryable, "ManagedEnvironmentNotProvisioned"),
		"app.azure.com/Job":                                      codeIs(Retryable, "ManagedEnvironmentNotProvisioned"),
		"cdn.azure.com/Route":                                    cdnOriginGroupNotReady,
		"cdn.azure.com/Rule":                                     cdnOriginGroupNotReady,
		"cdn.azure.com/SecurityPolicy":                           cdnSecurityPolicyNotReady,
		"compute.azure.com/Disk":                                 diskAccessNotReady,
		"compute.azure.com/VirtualMachine":                       codeIs(Retryable, "OperationNotAllowed"),
		"compute.azure.com/VirtualMachineScaleSet":               codeIs(Retryable, "OperationNotAllowed"),
		"containerservice.azure.com/FleetsMember":                codeIs(Retryable, "DependentResourceNotFound"),
		"containerservice.azure.com/ManagedCluster":              codeIs(Retryable, "CustomKubeletIdentityMissingPermissionError"),
		"documentdb.azure.com/DatabaseAccount":                   cosmosCapacity,
		"documentdb.azure.com/MongodbDatabase":                   codeIs(Retryable, "BadRequest"),
		"documentdb.azure.com/SqlDatabase":                       codeIs(Retryable, "BadRequest"),
		"documentdb.azure.com/SqlRoleAssignment":                 codeAndMessage(Retryable, "BadRequest", "was not found in the AAD tenant"),
		"insights.azure.com/DataCollectionRule":                  codeIs(Retryable, "WorkspaceNotFound"),
		"insights.azure.com/ScheduledQueryRule":                  scheduledQueryRuleNotReady,
		"machinelearningservices.azure.com/Workspace":            codeAndMessage(Retryable, "BadRequest", "StorageAccountIsNotProvisioned"),
		"network.azure.com/AzureFirewall":                        firewallPolicyNotReady,
		"network.azure.com/DnsForwardingRuleset":                 messageContains(Retryable, "was not found"),
		"network.azure.com/DnsZonesARecord":                      dnsRecordTargetNotReady,
		"network.azure.com/DnsZonesAAAARecord":                   dnsRecordTargetNotReady,
		"network.azure.com/DnsZonesCNAMERecord":                  dnsRecordTargetNotReady,
		"network.azure.com/NetworkWatchersFlowLog":               codeIs(Retryable, "NetworkSecurityGroupNotFoundForFlowLog", "StorageProvisioningStateNotSucceeded"),
		"network.azure.com/PublicIPAddress":                      codeIs(Retryable, "ReferencedResourceNotProvisioned"),
		"network.azure.com/VirtualNetworksSubnet":                codeIs(Retryable, "NetcfgSubnetRangeOutsideVnet"),
		"network.azure.com/VirtualNetworksVirtualNetworkPeering": codeIs(Retryable, "ReferencedResourceNotProvisioned"),
		"servicebus.azure.com/NamespacesTopicsSubscription":      codeIs(Retryable, "MessagingGatewayBadRequest"),
		"sql.azure.com/Server":                                   codeIs(Fatal, "PasswordNotComplex"),
		"sql.azure.com/ServersVulnerabilityAssessment":           codeIs(Retryable, "VulnerabilityAssessmentADSIsDisabled"),
	}
	for k, match := range classifiers {
		group, kind, _ := strings.Cut(k, "/")
		register(group, kind).ClassifyError = override(match)
	}
}

// override makes a classifier of a match: the match's classification when
// it matches, else the generic one.
func override(match func(CloudError) (Classification, bool)) ErrorClassifier {
	return func(e CloudError, generic Classification) Classification {
		if c, ok := match(e); ok {
			return c
		}
		return generic
	}
}

// codeIs matches any of codes.
func codeIs(c Classification, codes ...string) func(CloudError) (Classification, bool) {
	return func(e CloudError) (Classification, bool) {
		for _, code := range codes {
			if e.Code == code {
				return c, true
			}
		}
		return 0, false
	}
}

// codeAndMessage matches code with a message containing substr.
func codeAndMessage(c Classification, code, substr string) func(CloudError) (Classification, bool) {
	return func(e CloudError) (Classification, bool) {
		return c, e.Code == code && strings.Contains(e.Message, substr)
	}
}

// messageContains matches any code with a message containing substr.
func messageContains(c Classification, substr string) func(CloudError) (Classification, bool) {
	return func(e CloudError) (Classification, bool) {
		return c, strings.Contains(e.Message, substr)
	}
}

// cdnOriginGroupNotReady: a route or rule whose origin group has no enabled
// origin yet.
func cdnOriginGroupNotReady(e CloudError) (Classification, bool) {
	return Retryable, e.Code == "BadRequest" &&
		strings.Contains(e.Message, "originGroup is created successfully") &&
		strings.Contains(e.Message, "at least one enabled origin is created")
}

// cdnSecurityPolicyNotReady: a security policy whose domain is not yet
// associated with the profile.
func cdnSecurityPolicyNotReady(e CloudError) (Classification, bool) {
	return Retryable, e.Code == "BadRequest" &&
		strings.Contains(e.Message, "is not associated with the AFDX profile") &&
		strings.Contains(e.Message, "is in a invalid provisioning state")
}

var (
	diskAccessNotFoundRegex    = regexp.MustCompile("DiskAccess.*not found")
	diskAccessFailedStateRegex = regexp.MustCompile("DiskAccess.*is in failed state.")
)

// diskAccessNotReady: a disk whose DiskAccess does not exist yet or is
// failing.
func diskAccessNotReady(e CloudError) (Classification, bool) {
	return Retryable, (e.Code == "BadRequest" && diskAccessNotFoundRegex.MatchString(e.Message)) ||
		(e.Code == "Conflict" && diskAccessFailedStateRegex.MatchString(e.Message))
}

// cosmosCapacity: a region out of capacity for new accounts is fatal.
func cosmosCapacity(e CloudError) (Classification, bool) {
	return Fatal, e.Code == "ServiceUnavailable" && strings.Contains(e.Message, "currently experiencing high demand")
}

// scheduledQueryRuleNotReady: a scope that does not exist yet, or an
// identity whose role assignment has not propagated.
func scheduledQueryRuleNotReady(e CloudError) (Classification, bool) {
	return Retryable, e.Code == "BadRequest" &&
		(strings.Contains(e.Message, "does not exist") || strings.Contains(e.Message, "insufficient access"))
}

var firewallReferenceNotFound = regexp.MustCompile("(?i)failed to reference Firewall Policy")

// firewallPolicyNotReady: a firewall policy still being created.
func firewallPolicyNotReady(e CloudError) (Classification, bool) {
	return Retryable, e.Code == "AzfwAddToFirewallPolicyFailed" && firewallReferenceNotFound.MatchString(e.Message)
}

var referencedResourceNotFound = regexp.MustCompile("The referenced resource.*was not found")

// dnsRecordTargetNotReady: a record pointing at a resource still being
// created.
func dnsRecordTargetNotReady(e CloudError) (Classification, bool) {
	return Retryable, e.Code == "BadRequest" && referencedResourceNotFound.MatchString(e.Message)
}
