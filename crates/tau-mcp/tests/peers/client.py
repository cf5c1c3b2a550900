"""An MCP client built on the Python `mcp` SDK, driven from tau's end-to-end tests.

Connects to an MCP server over stdio or streamable HTTP, lists its tools, makes the calls
it is given and prints one JSON document: the tools, each call's result (or its error)
and every elicitation question the server asked, with the answer given.

    client.py [--elicit accept|accept-false|decline|cancel|silent|none] [--call NAME JSON]...
              (--stdio COMMAND ARG... | --http URL [--token TOKEN])
"""

import argparse
import asyncio
import json
import sys

import httpx2
import mcp_types as types
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError


def parse_args():
    parser = argparse.ArgumentParser()
    parser.add_argument("--elicit", default="none", choices=["accept", "accept-false", "decline", "cancel", "silent", "none"])
    parser.add_argument("--call", nargs=2, action="append", default=[], metavar=("NAME", "JSON"))
    parser.add_argument("--http")
    parser.add_argument("--token")
    parser.add_argument("--stdio", nargs=argparse.REMAINDER)
    return parser.parse_args()


def text_of(result):
    return [block.text for block in result.content if isinstance(block, types.TextContent)]


async def run(args):
    questions = []

    async def on_elicit(_context, params):
        questions.append({"message": params.message, "requestedSchema": params.requested_schema})
        if args.elicit == "accept":
            return types.ElicitResult(action="accept", content={"approve": True})
        if args.elicit == "silent":
            await asyncio.sleep(3600)
        if args.elicit == "accept-false":
            return types.ElicitResult(action="accept", content={"approve": False})
        return types.ElicitResult(action=args.elicit)

    callback = None if args.elicit == "none" else on_elicit
    if args.http:
        headers = {"Authorization": f"Bearer {args.token}"} if args.token else {}
        http = httpx2.AsyncClient(headers=headers, timeout=60)
        server = streamable_http_client(args.http, http_client=http)
    else:
        server = StdioServerParameters(command=args.stdio[0], args=args.stdio[1:])

    out = {"tools": [], "calls": [], "questions": questions}
    async with Client(server, elicitation_callback=callback) as client:
        listed = await client.list_tools()
        for tool in listed.tools:
            out["tools"].append(tool.model_dump(by_alias=True, exclude_none=True, mode="json"))
        for name, arguments in args.call:
            try:
                result = await client.call_tool(name, json.loads(arguments))
                out["calls"].append({"tool": name, "isError": bool(result.is_error), "text": text_of(result)})
            except MCPError as error:
                out["calls"].append({"tool": name, "error": {"code": error.error.code, "message": error.error.message}})
    print(json.dumps(out, sort_keys=True))


if __name__ == "__main__":
    try:
        asyncio.run(run(parse_args()))
    except BaseException as error:  # noqa: BLE001 - the test reads the reason from stderr
        print(f"client failed: {error!r}", file=sys.stderr)
        sys.exit(1)
