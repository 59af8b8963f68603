package codeassist

import (
	"context"
	"errors"
	"github.com/subpool/subpool/internal/freeport"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/subpool/subpool/proxy/clock"
)

// Answers as the service gives them. The free-tier load is the one logged
// in dbcodeio/public#1093 (its privacy notice shortened); the tier lists
// follow types.ts and the cases of Gemini CLI's setup.test.ts; the
// refusals are google.rpc.Status bodies as gemini-cli#1343 shows one
// (SERVICE_DISABLED) and VPC Service Controls sends them.
const (
	loadFreeUser = `{
  "currentTier": {
    "id": "free-tier",
    "name": "Gemini Code Assist for individuals",
    "description": "Gemini-powered code suggestions and chat in multiple IDEs",
    "privacyNotice": {"showNotice": true, "noticeText": "This notice and our Privacy Policy - https://policies.google.com/privacy - describe how Gemini Code Assist for individuals handles your data."}
  },
  "allowedTiers": [
    {"id": "free-tier", "name": "Gemini Code Assist for individuals", "description": "Gemini-powered code suggestions and chat in multiple IDEs", "isDefault": true, "privacyNotice": {"showNotice": true}},
    {"id": "standard-tier", "name": "Gemini Code Assist", "description": "Unlimited coding assistant with the most powerful Gemini models", "userDefinedCloudaicompanionProject": true, "privacyNotice": {}}
  ],
  "cloudaicompanionProject": "wise-vortex-4k2q9"
}`
	loadStandardNoProject = `{"currentTier": {"id": "standard-tier", "name": "Gemini Code Assist", "userDefinedCloudaicompanionProject": true}}`
	loadPaid              = `{
  "currentTier": {"id": "free-tier", "name": "Gemini Code Assist for individuals"},
  "paidTier": {"id": "g1-pro-tier", "name": "Gemini Code Assist in Google One AI Pro", "availableCredits": [{"creditType": "GOOGLE_ONE_AI", "creditAmount": "1000"}]},
  "cloudaicompanionProject": "gen-lang-client-0123456789"
}`
	loadNewFree = `{
  "allowedTiers": [
    {"id": "free-tier", "name": "Gemini Code Assist for individuals", "isDefault": true},
    {"id": "standard-tier", "name": "Gemini Code Assist", "userDefinedCloudaicompanionProject": true}
  ]
}`
	loadNewStandard = `{"allowedTiers": [{"id": "standard-tier", "name": "Gemini Code Assist", "isDefault": true, "userDefinedCloudaicompanionProject": true}]}`
	loadIneligible  = `{
  "currentTier": {"id": "standard-tier", "name": "Gemini Code Assist"},
  "ineligibleTiers": [
    {"reasonCode": "INELIGIBLE_ACCOUNT", "reasonMessage": "Not eligible for standard", "tierId": "standard-tier", "tierName": "standard"},
    {"reasonCode": "UNSUPPORTED_LOCATION", "reasonMessage": "Your current account is not eligible for Gemini Code Assist for individuals because it is not currently available in your location.", "tierId": "free-tier", "tierName": "Gemini Code Assist for individuals"}
  ]
}`
	loadValidation = `{
  "currentTier": null,
  "allowedTiers": [{"id": "standard-tier", "name": "paid", "isDefault": true}],
  "ineligibleTiers": [{"reasonCode": "VALIDATION_REQUIRED", "reasonMessage": "Please verify your account", "tierId": "free-tier", "tierName": "free", "validationUrl": "https://accounts.google.com/signin/continue?sarp=1&scc=1"}]
}`
	loadNoTiers    = `{"currentTier": null, "ineligibleTiers": [{"reasonCode": "INELIGIBLE_ACCOUNT", "reasonMessage": "User is not eligible", "tierId": "standard-tier", "tierName": "standard"}]}`
	onboardDone    = `{"name": "operations/onboard-7f3a", "done": true, "response": {"@type": "type.googleapis.com/google.internal.cloud.code.v1internal.OnboardUserResponse", "cloudaicompanionProject": {"id": "wise-vortex-4k2q9", "name": "projects/401234567890"}}}`
	onboardPending = `{"name": "operations/onboard-7f3a", "done": false}`
	onboardEmpty   = `{"name": "operations/onboard-7f3a", "done": true, "response": {}}`
	vpcSC          = `{"error": {"code": 403, "message": "Request is prohibited by organization's policy. vpcServiceControlsUniqueIdentifier: 2gQ7h", "status": "PERMISSION_DENIED", "details": [{"@type": "type.googleapis.com/google.rpc.PreconditionFailure", "violations": [{"type": "VPC_SERVICE_CONTROLS", "description": "2gQ7h"}]}, {"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "SECURITY_POLICY_VIOLATED", "domain": "googleapis.com"}]}}`
	serviceOff     = `{"error": {"code": 403, "message": "Gemini for Google Cloud API has not been used in project my-proj before or it is disabled.\n Enable it by visiting https://console.developers.google.com/apis/api/cloudaicompanion.googleapis.com/overview?project=my-proj then retry.", "status": "PERMISSION_DENIED", "details": [{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "SERVICE_DISABLED", "domain": "googleapis.com"}]}}`
	unavailable    = `{"error": {"code": 503, "message": "The service is currently unavailable.", "status": "UNAVAILABLE"}}`
)

const noProjectMeta = `{"ideType":"IDE_UNSPECIFIED","platform":"PLATFORM_UNSPECIFIED","pluginType":"GEMINI"}`

// setupCase is one account as TestSetupUser meets it.
type setupCase struct {
	name    string
	project string
	load    answer
	onboard []answer
	want    User
	wantErr func(error) bool
	// calls and bodies the service must have seen, in order
	calls []string
	body  map[string]string
}

// setupCases are TestSetupUser's accounts that need no onboarding.
func setupCases() []setupCase {
	return append([]setupCase{{
		name: "free user with a project already",
		load: answer{200, loadFreeUser},
		want: User{ProjectID: "wise-vortex-4k2q9", TierID: TierFree, TierName: "Gemini Code Assist for individuals"},
		// No project given: the request names none.
		calls: []string{"loadCodeAssist"},
		body:  map[string]string{"loadCodeAssist": `{"metadata":` + noProjectMeta + `}`},
	}, {
		name:    "the answer's project wins over the user's",
		project: "my-proj",
		load:    answer{200, loadFreeUser},
		want:    User{ProjectID: "wise-vortex-4k2q9", TierID: TierFree, TierName: "Gemini Code Assist for individuals"},
		calls:   []string{"loadCodeAssist"},
		body:    map[string]string{"loadCodeAssist": `{"cloudaicompanionProject":"my-proj","metadata":{"ideType":"IDE_UNSPECIFIED","platform":"PLATFORM_UNSPECIFIED","pluginType":"GEMINI","duetProject":"my-proj"}}`},
	}, {
		name:    "standard tier without a project takes the user's",
		project: "my-proj",
		load:    answer{200, loadStandardNoProject},
		want:    User{ProjectID: "my-proj", TierID: TierStandard, TierName: "Gemini Code Assist"},
		calls:   []string{"loadCodeAssist"},
	}, {
		name:    "standard tier without any project",
		load:    answer{200, loadStandardNoProject},
		wantErr: func(err error) bool { return errors.Is(err, ErrProjectRequired) },
	}, {
		name: "a paid tier names the account",
		load: answer{200, loadPaid},
		want: User{ProjectID: "gen-lang-client-0123456789", TierID: "g1-pro-tier", TierName: "Gemini Code Assist in Google One AI Pro"},
	}, {
		name: "ineligible: every reason said",
		load: answer{200, loadIneligible},
		wantErr: func(err error) bool {
			var ie *IneligibleError
			return errors.As(err, &ie) && strings.Contains(err.Error(), "Not eligible for standard, Your current account is not eligible") && strings.Contains(err.Error(), "add-key google")
		},
	}}, onboardCases()...)
}

// onboardCases are TestSetupUser's accounts from onboarding on.
func onboardCases() []setupCase {
	return []setupCase{{
		name:    "new free user is onboarded without a project",
		project: "my-proj", // the free tier names none even so
		load:    answer{200, loadNewFree},
		onboard: []answer{{200, onboardDone}},
		want:    User{ProjectID: "wise-vortex-4k2q9", TierID: TierFree, TierName: "Gemini Code Assist for individuals", Onboarded: true},
		calls:   []string{"loadCodeAssist", "onboardUser"},
		body:    map[string]string{"onboardUser": `{"tierId":"free-tier","metadata":` + noProjectMeta + `}`},
	}, {
		name:    "new standard user is onboarded with the user's project",
		project: "my-proj",
		load:    answer{200, loadNewStandard},
		onboard: []answer{{200, onboardDone}},
		want:    User{ProjectID: "wise-vortex-4k2q9", TierID: TierStandard, TierName: "Gemini Code Assist", Onboarded: true},
		body:    map[string]string{"onboardUser": `{"tierId":"standard-tier","cloudaicompanionProject":"my-proj","metadata":{"ideType":"IDE_UNSPECIFIED","platform":"PLATFORM_UNSPECIFIED","pluginType":"GEMINI","duetProject":"my-proj"}}`},
	}, {
		name:    "onboarding that names no project keeps the user's",
		project: "my-proj",
		load:    answer{200, loadNewStandard},
		onboard: []answer{{200, onboardEmpty}},
		want:    User{ProjectID: "my-proj", TierID: TierStandard, TierName: "Gemini Code Assist", Onboarded: true},
	}, {
		name:    "onboarding that names no project, and none given",
		load:    answer{200, loadNewStandard},
		onboard: []answer{{200, onboardEmpty}},
		wantErr: func(err error) bool { return errors.Is(err, ErrProjectRequired) },
	}, {
		name:    "no tier allowed: legacy-tier, as Gemini CLI falls back",
		load:    answer{200, loadNoTiers},
		onboard: []answer{{200, onboardDone}},
		want:    User{ProjectID: "wise-vortex-4k2q9", TierID: TierLegacy, Onboarded: true},
		body:    map[string]string{"onboardUser": `{"tierId":"legacy-tier","metadata":` + noProjectMeta + `}`},
	}, {
		name: "validation required",
		load: answer{200, loadValidation},
		wantErr: func(err error) bool {
			var ve *ValidationError
			return errors.As(err, &ve) && ve.URL == "https://accounts.google.com/signin/continue?sarp=1&scc=1" && strings.Contains(err.Error(), "open https://accounts.google.com/signin/continue?sarp=1&scc=1 ")
		},
		calls: []string{"loadCodeAssist"},
	}, {
		name:    "VPC Service Controls: a standard account, with the user's project",
		project: "corp-proj",
		load:    answer{403, vpcSC},
		want:    User{ProjectID: "corp-proj", TierID: TierStandard},
		calls:   []string{"loadCodeAssist"},
	}, {
		name:    "VPC Service Controls without a project",
		load:    answer{403, vpcSC},
		wantErr: func(err error) bool { return errors.Is(err, ErrProjectRequired) },
	}, {
		name:    "Cloud Shell's project refused",
		project: "cloudshell-gca",
		load:    answer{403, serviceOff},
		wantErr: func(err error) bool { return errors.Is(err, ErrCloudShellProject) },
	}, {
		name:    "any other refusal is the service's, on one line",
		project: "my-proj",
		load:    answer{403, serviceOff},
		wantErr: func(err error) bool {
			var ae *APIError
			return errors.As(err, &ae) && ae.Status == 403 && ae.Reason == "SERVICE_DISABLED" && ae.Code == "PERMISSION_DENIED" &&
				!strings.Contains(err.Error(), "\n") && strings.Contains(err.Error(), "has not been used in project my-proj")
		},
		calls: []string{"loadCodeAssist"}, // a 403 is not tried again
	}, {
		name:    "a project number is refused before any call",
		project: "401234567890",
		wantErr: func(err error) bool { return err != nil && strings.Contains(err.Error(), "project number") },
		calls:   []string{},
	}}
}

// Each row is one account as Gemini CLI's setupUser meets it: what the
// service answers, the project the user gave, and what comes out.
func TestSetupUser(t *testing.T) {
	for _, tc := range setupCases() {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(t).on("loadCodeAssist", tc.load).on("onboardUser", tc.onboard...)
			u, err := f.client(clock.NewFake(epoch)).SetupUser(guard(t), token, tc.project)
			if tc.wantErr != nil {
				if !tc.wantErr(err) {
					t.Fatalf("error: %v", err)
				}
				if strings.Contains(err.Error(), token) {
					t.Fatal("the token is in the error")
				}
			} else if err != nil || u != tc.want {
				t.Fatalf("got %+v, %v; want %+v", u, err, tc.want)
			}
			seen := f.seen()
			if tc.calls != nil {
				var got []string
				for _, c := range seen {
					got = append(got, strings.TrimPrefix(c.Path, "/v1internal:"))
				}
				if strings.Join(got, ",") != strings.Join(tc.calls, ",") {
					t.Fatalf("calls %v, want %v", got, tc.calls)
				}
			}
			for _, c := range seen {
				if c.Method != http.MethodPost || c.Auth != "Bearer "+token {
					t.Fatalf("call %+v", c)
				}
				if want, ok := tc.body[strings.TrimPrefix(c.Path, "/v1internal:")]; ok {
					sameJSON(t, c.Path, c.Body, want)
				}
			}
		})
	}
}

// Onboarding that is not done at once is looked at every 5 s, as Gemini
// CLI does, at GET /v1internal/{operation}, until it is.
func TestOnboardingIsPolled(t *testing.T) {
	f := newFake(t).
		on("loadCodeAssist", answer{200, loadNewStandard}).
		on("onboardUser", answer{200, onboardPending}).
		on("GET operations/onboard-7f3a", answer{200, onboardPending}, answer{200, onboardDone})
	clk := clock.NewFake(epoch)
	type result struct {
		u   User
		err error
	}
	done := make(chan result, 1)
	ctx := guard(t)
	go func() {
		u, err := f.client(clk).SetupUser(ctx, token, "my-proj")
		done <- result{u, err}
	}()
	for i := 1; i <= 2; i++ {
		if err := clk.AdvanceToNextWaiter(ctx); err != nil {
			t.Fatal(err)
		}
		if got := clk.Now().Sub(epoch); got != time.Duration(i)*5*time.Second {
			t.Fatalf("poll %d at %s, want every 5s", i, got)
		}
	}
	r := <-done
	if r.err != nil || r.u.ProjectID != "wise-vortex-4k2q9" || !r.u.Onboarded {
		t.Fatalf("%+v %v", r.u, r.err)
	}
	seen := f.seen()
	if len(seen) != 4 || seen[2].Method != http.MethodGet || seen[2].Path != "/v1internal/operations/onboard-7f3a" || seen[2].Auth != "Bearer "+token {
		t.Fatalf("calls %+v", seen)
	}
}

// Polling ends with ctx: Gemini CLI would wait for ever.
func TestOnboardingPollEndsWithTheContext(t *testing.T) {
	f := newFake(t).
		on("loadCodeAssist", answer{200, loadNewStandard}).
		on("onboardUser", answer{200, onboardPending}).
		on("GET operations/onboard-7f3a", answer{200, onboardPending})
	clk := clock.NewFake(epoch)
	ctx, cancel := context.WithCancel(guard(t))
	done := make(chan error, 1)
	go func() {
		_, err := f.client(clk).SetupUser(ctx, token, "my-proj")
		done <- err
	}()
	for range 3 {
		if err := clk.AdvanceToNextWaiter(guard(t)); err != nil {
			t.Fatal(err)
		}
	}
	if err := clk.BlockUntil(guard(t), 1); err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v", err)
	}
}

// An operation name that would leave the API's path is refused.
func TestOperationNameStaysUnderTheAPI(t *testing.T) {
	for _, name := range []string{"../../evil", "operations/x?y=1", "/abs", "operations//x", "operations/ x"} {
		if validOperation(name) {
			t.Errorf("%q accepted", name)
		}
	}
	if !validOperation("operations/onboard-7f3a") {
		t.Error("a real name refused")
	}
}

// A call with no answer, a 429 or a 5xx is tried three times more, 100,
// 200 and 400 ms apart, as Gemini CLI's requestPost retries; a 4xx is
// not tried again.
func TestTemporaryFailuresAreRetried(t *testing.T) {
	clk := clock.NewFake(epoch)
	f := newFake(t).on("retrieveUserQuota", answer{503, unavailable}, answer{429, `{"error":{"code":429,"status":"RESOURCE_EXHAUSTED"}}`}, answer{200, `{"buckets":[]}`})
	ctx := guard(t)
	done := make(chan error, 1)
	go func() {
		_, err := f.client(clk).RetrieveUserQuota(ctx, token, "p")
		done <- err
	}()
	for _, want := range []time.Duration{100 * time.Millisecond, 300 * time.Millisecond} {
		if err := clk.AdvanceToNextWaiter(ctx); err != nil {
			t.Fatal(err)
		}
		if got := clk.Now().Sub(epoch); got != want {
			t.Fatalf("retry at %s, want %s", got, want)
		}
	}
	if err := <-done; err != nil || len(f.seen()) != 3 {
		t.Fatalf("%v after %d calls", err, len(f.seen()))
	}

	f = newFake(t).on("retrieveUserQuota", answer{503, unavailable})
	go func() {
		_, err := f.client(clk).RetrieveUserQuota(ctx, token, "p")
		done <- err
	}()
	for range 3 {
		if err := clk.AdvanceToNextWaiter(ctx); err != nil {
			t.Fatal(err)
		}
	}
	var ae *APIError
	if err := <-done; !errors.As(err, &ae) || ae.Status != 503 || ae.Code != "UNAVAILABLE" || len(f.seen()) != 4 {
		t.Fatalf("%v after %d calls", err, len(f.seen()))
	}

	// Nothing listens: the call is tried again, then says so.
	dead := &Client{Endpoint: closedURL(t), Clock: clk}
	go func() {
		_, err := dead.RetrieveUserQuota(ctx, token, "p")
		done <- err
	}()
	for range 3 {
		if err := clk.AdvanceToNextWaiter(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if err := <-done; !errors.As(err, &ae) || ae.Status != 0 || !strings.Contains(err.Error(), "no answer") || strings.Contains(err.Error(), token) {
		t.Fatalf("%v", err)
	}
}

// closedURL is an address where nothing listens.
func closedURL(t *testing.T) string {
	return "http://" + freeport.Addr(t)
}
