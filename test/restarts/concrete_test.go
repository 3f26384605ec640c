package restarts

import (
	"context"
	"iter"
	"time"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/resilientmcp/resilientmcp/client"
)

// concreteClient is the methods of mcp-go's *client.Client that
// mcpclient.MCPClient lacks, copied with their signatures, less Start and
// GetTransport (which a pool of sessions has no use for). Both types must
// have them: mcp-go's proves the signatures are its own, ResilientClient's
// that code written against the concrete type compiles after the swap.
type concreteClient interface {
	mcpclient.MCPClient

	OnConnectionLost(handler func(error))
	GetServerCapabilities() mcp.ServerCapabilities
	GetClientCapabilities() mcp.ClientCapabilities
	GetSessionId() string
	IsInitialized() bool
	ProtocolVersion() string
	Discover(ctx context.Context, request mcp.DiscoverRequest) (*mcp.DiscoverResult, error)
	RootListChanges(ctx context.Context) error

	IterTools(ctx context.Context, request mcp.ListToolsRequest) iter.Seq2[mcp.Tool, error]
	IterPrompts(ctx context.Context, request mcp.ListPromptsRequest) iter.Seq2[mcp.Prompt, error]
	IterResources(ctx context.Context, request mcp.ListResourcesRequest) iter.Seq2[mcp.Resource, error]
	IterResourceTemplates(ctx context.Context, request mcp.ListResourceTemplatesRequest) iter.Seq2[mcp.ResourceTemplate, error]

	GetTask(ctx context.Context, request mcp.GetTaskRequest) (*mcp.GetTaskResult, error)
	ListTasks(ctx context.Context, request mcp.ListTasksRequest) (*mcp.ListTasksResult, error)
	ListTasksByPage(ctx context.Context, request mcp.ListTasksRequest) (*mcp.ListTasksResult, error)
	CancelTask(ctx context.Context, request mcp.CancelTaskRequest) (*mcp.CancelTaskResult, error)
	TaskResult(ctx context.Context, request mcp.TaskResultRequest) (*mcp.TaskResultResult, error)
	WaitForTask(ctx context.Context, request mcp.GetTaskRequest, fallbackPollInterval time.Duration) (*mcp.GetTaskResult, error)

	Listen(ctx context.Context, filter mcp.SubscriptionFilter) error
	ListenAsync(ctx context.Context, filter mcp.SubscriptionFilter, onError func(error)) (stop func(), err error)
	PendingSubscriptionFilter() mcp.SubscriptionFilter
}

var (
	_ concreteClient = (*mcpclient.Client)(nil)
	_ concreteClient = (*client.ResilientClient)(nil)
)
