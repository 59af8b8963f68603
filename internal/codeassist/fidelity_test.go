package codeassist

import (
	"regexp"
	"testing"

	"github.com/subpool/subpool/internal/realclients"
)

// The fidelity test reads the installed, pinned Gemini CLI
// (internal/realclients) and fails when a fact this package follows is no
// longer in its bundle: the endpoint and version, the metadata setupUser
// sends, how it picks and onboards a tier, how often it polls, what it
// retries, and the fields of a quota bucket. When it fails, read the new
// bundle's code_assist/setup.ts and server.ts and change this package to
// match.
func TestSetupIsGeminiCLIs(t *testing.T) {
	for _, src := range geminiChunks(t, "// packages/core/src/code_assist/setup.ts") {
		for _, c := range []struct{ what, re string }{
			{"endpoint", `var CODE_ASSIST_ENDPOINT = "` + regexp.QuoteMeta(DefaultEndpoint) + `"`},
			{"version", `var CODE_ASSIST_API_VERSION = "` + APIVersion + `"`},
			{"method URL", "return `\\$\\{this\\.getBaseUrl\\(\\)\\}:\\$\\{method\\}`"},
			{"operation URL", "getOperationUrl\\((\\w+)\\) \\{\\s*return `\\$\\{this\\.getBaseUrl\\(\\)\\}/\\$\\{\\w+\\}`"},
			{"endpoint read from the environment", `process\.env\["CODE_ASSIST_ENDPOINT"\] \?\? CODE_ASSIST_ENDPOINT`},
			{"metadata", `coreClientMetadata = \{\s*ideType: "IDE_UNSPECIFIED",\s*platform: "PLATFORM_UNSPECIFIED",\s*pluginType: "GEMINI"\s*\}`},
			{"load request", `loadCodeAssist\(\{\s*cloudaicompanionProject: projectId,\s*metadata: \{\s*\.\.\.coreClientMetadata,\s*duetProject: projectId\s*\}\s*\}\)`},
			{"project from the environment", `process\.env\["GOOGLE_CLOUD_PROJECT"\] \|\| process\.env\["GOOGLE_CLOUD_PROJECT_ID"\]`},
			{"project number refused", `/\^\\d\+\$/\.test\(projectId\)`},
			{"free tier onboards without a project", `if \(tier\.id === UserTierId\.FREE\) \{\s*onboardReq = \{\s*tierId: tier\.id,\s*cloudaicompanionProject: void 0,\s*metadata: coreClientMetadata\s*\}`},
			{"other tiers onboard with it", `onboardReq = \{\s*tierId: tier\.id,\s*cloudaicompanionProject: projectId,\s*metadata: \{\s*\.\.\.coreClientMetadata,\s*duetProject: projectId\s*\}`},
			{"poll every 5 s", `setTimeout\((\w+), 5e3\)\);\s*lroRes = await caServer\.getOperation\(operationName\)`},
			{"project of the operation", `lroRes\.response\?\.cloudaicompanionProject\?\.id`},
			{"default tier", `for \(const tier of res\.allowedTiers \|\| \[\]\) \{\s*if \(tier\.isDefault\)`},
			{"legacy fallback", `id: UserTierId\.LEGACY,\s*userDefinedCloudaicompanionProject: true`},
			{"tier ids", `FREE: "` + TierFree + `",\s*LEGACY: "` + TierLegacy + `",\s*STANDARD: "` + TierStandard + `"`},
			{"paid tier first", `userTier: loadRes\.paidTier\?\.id \?\? loadRes\.currentTier\.id \?\? UserTierId\.STANDARD`},
			{"validation", `\.validationUrl && \w+\.reasonCode === "VALIDATION_REQUIRED"`},
			{"VPC-SC is a standard account", `detail\.reason === "SECURITY_POLICY_VIOLATED"`},
			{"VPC-SC answer", `return \{\s*currentTier: \{ id: UserTierId\.STANDARD \}\s*\}`},
			{"Cloud Shell project", `req\.cloudaicompanionProject === "cloudshell-gca"`},
			{"project required", `ProjectIdRequiredError\(\)`},
			{"retries", `retryDelay = 100\) \{`},
			{"retry count", `retry: 3,\s*noResponseRetries: 3,\s*statusCodesToRetry: \[\s*\[429, 429\],\s*\[499, 499\],\s*\[500, 599\]\s*\]`},
			{"quota request", `retrieveUserQuota\(\{\s*project: codeAssistServer\.projectId\s*\}\)`},
			{"buckets without a model or fraction skipped", `if \(!bucket\.modelId \|\| bucket\.remainingFraction == null\) \{\s*continue;`},
			{"amount is an int64 string", `parseInt\(bucket\.remainingAmount, 10\)`},
			{"limit from amount and fraction", `Math\.round\(remaining / bucket\.remainingFraction\)`},
			{"reset time", `resetTime: bucket\.resetTime`},
		} {
			if !regexp.MustCompile(c.re).MatchString(src) {
				t.Errorf("%s: /%s/ is not in Gemini CLI's bundle any more", c.what, c.re)
			}
		}
	}
}

// geminiChunks returns every bundle file of the installed Gemini CLI that
// holds marker (esbuild names a source file in a comment where its code
// begins; the same code sits in more than one chunk).
func geminiChunks(t *testing.T, marker string) []string {
	t.Helper()
	out, err := realclients.BundleFiles("@google/gemini-cli", marker)
	if err != nil {
		t.Fatal(err)
	}
	return out
}
