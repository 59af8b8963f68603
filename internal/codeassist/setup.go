package codeassist

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"regexp"
	"strings"

	"github.com/subpool/subpool/proxy/clock"
)

// Tier ids Gemini CLI knows by name (types.ts UserTierId); the service
// has others (paid tiers such as g1-pro-tier), kept as they come.
const (
	TierFree     = "free-tier"
	TierLegacy   = "legacy-tier"
	TierStandard = "standard-tier"
)

// metadata is the ClientMetadata Gemini CLI's setupUser sends: an IDE it
// does not name, a platform it does not name, and its plugin type.
type metadata struct {
	IDEType     string `json:"ideType"`
	Platform    string `json:"platform"`
	PluginType  string `json:"pluginType"`
	DuetProject string `json:"duetProject,omitempty"`
}

func newMetadata(project string) metadata {
	return metadata{IDEType: "IDE_UNSPECIFIED", Platform: "PLATFORM_UNSPECIFIED", PluginType: "GEMINI", DuetProject: project}
}

// loadRequest is LoadCodeAssistRequest. An empty project is left out, as
// JSON.stringify leaves out Gemini CLI's undefined.
type loadRequest struct {
	Project  string   `json:"cloudaicompanionProject,omitempty"`
	Metadata metadata `json:"metadata"`
}

// Tier is a GeminiUserTier of loadCodeAssist's answer.
type Tier struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	Description string `json:"description"`
	IsDefault   bool   `json:"isDefault"`
	// UserDefinedProject: the tier needs a Google Cloud project of the
	// user's (userDefinedCloudaicompanionProject).
	UserDefinedProject     bool  `json:"userDefinedCloudaicompanionProject"`
	HasOnboardedPreviously *bool `json:"hasOnboardedPreviously"`
}

// IneligibleTier says why the account cannot have a tier.
type IneligibleTier struct {
	ReasonCode    string `json:"reasonCode"`
	ReasonMessage string `json:"reasonMessage"`
	TierID        string `json:"tierId"`
	TierName      string `json:"tierName"`
	ValidationURL string `json:"validationUrl"`
}

// LoadResponse is loadCodeAssist's answer, the part Gemini CLI's setup
// reads.
type LoadResponse struct {
	CurrentTier     *Tier            `json:"currentTier"`
	AllowedTiers    []Tier           `json:"allowedTiers"`
	IneligibleTiers []IneligibleTier `json:"ineligibleTiers"`
	PaidTier        *Tier            `json:"paidTier"`
	// Project is cloudaicompanionProject: the project Code Assist serves
	// the account under, when it has one already.
	Project projectID `json:"cloudaicompanionProject"`
}

// projectID is a project as the service names it: a string in
// loadCodeAssist's answer, {"id", "name"} in onboardUser's. Either is
// read.
type projectID string

func (p *projectID) UnmarshalJSON(b []byte) error {
	var s string
	if json.Unmarshal(b, &s) == nil {
		*p = projectID(s)
		return nil
	}
	var o struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(b, &o); err != nil {
		return err
	}
	*p = projectID(o.ID)
	return nil
}

// onboardRequest is OnboardUserRequest.
type onboardRequest struct {
	TierID   string   `json:"tierId,omitempty"`
	Project  string   `json:"cloudaicompanionProject,omitempty"`
	Metadata metadata `json:"metadata"`
}

// operation is the long-running operation onboardUser answers with.
type operation struct {
	Name     string `json:"name"`
	Done     bool   `json:"done"`
	Response struct {
		Project projectID `json:"cloudaicompanionProject"`
	} `json:"response"`
}

// User is what the setup found: the project every Code Assist call of the
// login names, and the account's tier.
type User struct {
	ProjectID string
	// TierID is the paid tier's id when the account has one, else the
	// current (or just onboarded) tier's; standard-tier when the service
	// named none, as Gemini CLI defaults.
	TierID   string
	TierName string
	// Onboarded: this setup onboarded the account (it had no tier).
	Onboarded bool
}

// Errors of the setup, each a one-line message that says what to do.
var (
	// ErrProjectRequired: the account (Workspace, Standard or Enterprise)
	// has no project of its own at Code Assist; Gemini CLI's
	// ProjectIdRequiredError.
	ErrProjectRequired = errors.New("this Google account needs a Google Cloud project for Gemini Code Assist: give its project id (GOOGLE_CLOUD_PROJECT, as Gemini CLI takes it) and log in again; see https://goo.gle/gemini-cli-auth-docs#workspace-gca")
	// ErrCloudShellProject: Cloud Shell's default project refused the
	// account.
	ErrCloudShellProject = errors.New("access to Cloud Shell's default Gemini project (cloudshell-gca) was denied: set GOOGLE_CLOUD_PROJECT to a project of your own (gcloud config set project PROJECT_ID) and log in again")
)

// IneligibleError: the service says the account can have no tier, and
// why (Gemini CLI's IneligibleTierError).
type IneligibleError struct{ Tiers []IneligibleTier }

func (e *IneligibleError) Error() string {
	var rs []string
	for _, t := range e.Tiers {
		if m := oneLine(t.ReasonMessage); m != "" {
			rs = append(rs, m)
		} else if t.ReasonCode != "" {
			rs = append(rs, ident(t.ReasonCode))
		}
	}
	return "this Google account cannot use Gemini Code Assist: " + strings.Join(rs, ", ") + "; use another account, or a Gemini API key (`subpool add-key google`)"
}

// ValidationError: Google wants the account verified in a browser before
// it serves it (reasonCode VALIDATION_REQUIRED). Gemini CLI asks the user
// and loads again; subpool has nobody to ask, so it says where to go.
type ValidationError struct {
	URL     string
	Message string
}

func (e *ValidationError) Error() string {
	s := "Google asks for this account to be verified before Gemini Code Assist serves it"
	if m := oneLine(e.Message); m != "" {
		s += " (" + m + ")"
	}
	return s + ": open " + e.URL + " and then log in again"
}

// numericProject is a project number, which Code Assist does not take
// where a project id belongs.
var numericProject = regexp.MustCompile(`^\d+$`)

// ProjectFromEnv is the project Gemini CLI's setup starts from:
// GOOGLE_CLOUD_PROJECT, else GOOGLE_CLOUD_PROJECT_ID; "" for none.
func ProjectFromEnv() string {
	if p := os.Getenv("GOOGLE_CLOUD_PROJECT"); p != "" {
		return p
	}
	return os.Getenv("GOOGLE_CLOUD_PROJECT_ID")
}

// SetupUser finds the project Code Assist serves the login under, as
// Gemini CLI's setupUser does at login: loadCodeAssist with project (the
// user's own Google Cloud project, "" for none); an account with a tier
// gets the project of the answer, or project; one without is onboarded
// to its default allowed tier (legacy-tier when none is marked), and the
// onboarding operation is looked at every PollInterval until it is done,
// or ctx ends: Gemini CLI waits without bound, so the caller bounds ctx.
//
// Errors: ErrProjectRequired, ErrCloudShellProject, *IneligibleError,
// *ValidationError, a project number given for project, or the
// *APIError of a call that failed.
func (c *Client) SetupUser(ctx context.Context, token, project string) (User, error) {
	if numericProject.MatchString(project) {
		return User{}, fmt.Errorf("%q is a Google Cloud project number; give the project id (like my-project-123) instead, in GOOGLE_CLOUD_PROJECT", project)
	}
	load, err := c.LoadCodeAssist(ctx, token, project)
	if err != nil {
		return User{}, err
	}
	if load.CurrentTier == nil {
		for _, t := range load.IneligibleTiers {
			if t.ValidationURL != "" && t.ReasonCode == "VALIDATION_REQUIRED" {
				return User{}, &ValidationError{URL: t.ValidationURL, Message: t.ReasonMessage}
			}
		}
	}
	if cur := load.CurrentTier; cur != nil {
		u := User{ProjectID: string(load.Project), TierID: cur.ID, TierName: cur.Name}
		if p := load.PaidTier; p != nil && p.ID != "" {
			u.TierID = p.ID
			if p.Name != "" {
				u.TierName = p.Name
			}
		}
		if u.TierID == "" {
			u.TierID = TierStandard
		}
		if u.ProjectID == "" {
			if project == "" {
				return User{}, ineligibleOrProjectRequired(load)
			}
			u.ProjectID = project
		}
		return u, nil
	}

	tier := onboardTier(load)
	req := onboardRequest{TierID: tier.ID, Project: project, Metadata: newMetadata(project)}
	if tier.ID == TierFree {
		// The free tier's project is Google's to pick: Gemini CLI names
		// none, even when it has one.
		req.Project, req.Metadata = "", newMetadata("")
	}
	op, err := c.onboard(ctx, token, req)
	if err != nil {
		return User{}, err
	}
	u := User{ProjectID: string(op.Response.Project), TierID: tier.ID, TierName: tier.Name, Onboarded: true}
	if u.TierID == "" {
		u.TierID = TierStandard
	}
	if u.ProjectID == "" {
		if project == "" {
			return User{}, ineligibleOrProjectRequired(load)
		}
		u.ProjectID = project
	}
	return u, nil
}

// LoadCodeAssist asks what the account has at Code Assist. A refusal for
// a VPC Service Controls perimeter (SECURITY_POLICY_VIOLATED) is read as
// a standard-tier account without a project, as Gemini CLI reads it.
func (c *Client) LoadCodeAssist(ctx context.Context, token, project string) (LoadResponse, error) {
	var out LoadResponse
	err := c.post(ctx, token, "loadCodeAssist", loadRequest{Project: project, Metadata: newMetadata(project)}, &out)
	var ae *APIError
	switch {
	case err == nil:
		return out, nil
	case errors.As(err, &ae) && ae.has("SECURITY_POLICY_VIOLATED"):
		return LoadResponse{CurrentTier: &Tier{ID: TierStandard}}, nil
	case errors.As(err, &ae) && ae.Status == http.StatusForbidden && project == "cloudshell-gca":
		return LoadResponse{}, ErrCloudShellProject
	}
	return LoadResponse{}, err
}

// onboard starts onboarding and follows its operation until it is done.
// An answer that is not done and names no operation is taken as it is,
// as Gemini CLI takes it.
func (c *Client) onboard(ctx context.Context, token string, req onboardRequest) (operation, error) {
	var op operation
	if err := c.post(ctx, token, "onboardUser", req, &op); err != nil {
		return operation{}, err
	}
	if op.Done || op.Name == "" {
		return op, nil
	}
	name := op.Name
	if !validOperation(name) {
		return operation{}, &APIError{Method: "onboardUser", Status: http.StatusOK, Message: "the answer names an operation that is not one"}
	}
	wait := c.PollInterval
	if wait <= 0 {
		wait = pollInterval
	}
	for !op.Done {
		if err := clock.Sleep(ctx, c.clock(), wait); err != nil {
			return operation{}, err
		}
		op = operation{}
		if err := c.do(ctx, token, http.MethodGet, c.base()+"/"+name, name, nil, &op); err != nil {
			return operation{}, err
		}
	}
	return op, nil
}

// validOperation keeps an operation's name to a path under the version:
// "operations/…", never a query or a climb out of it.
func validOperation(name string) bool {
	if strings.ContainsAny(name, "?#\\ ") || strings.HasPrefix(name, "/") {
		return false
	}
	for _, seg := range strings.Split(name, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return false
		}
	}
	return true
}

// onboardTier is the allowed tier marked default, else legacy-tier with
// a project of the user's (Gemini CLI's getOnboardTier).
func onboardTier(load LoadResponse) Tier {
	for _, t := range load.AllowedTiers {
		if t.IsDefault {
			return t
		}
	}
	return Tier{ID: TierLegacy, UserDefinedProject: true}
}

func ineligibleOrProjectRequired(load LoadResponse) error {
	if len(load.IneligibleTiers) > 0 {
		return &IneligibleError{Tiers: load.IneligibleTiers}
	}
	return ErrProjectRequired
}

// SetupUser is (&Client{HTTP: client, Endpoint: endpoint}).SetupUser:
// client nil takes a 30 s timeout, endpoint "" Google's.
func SetupUser(ctx context.Context, client *http.Client, endpoint, token, project string) (User, error) {
	return (&Client{HTTP: client, Endpoint: endpoint}).SetupUser(ctx, token, project)
}
