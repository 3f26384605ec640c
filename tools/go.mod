module github.com/resilientmcp/resilientmcp/tools

go 1.26.0
