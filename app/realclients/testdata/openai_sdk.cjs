// One responses.create() through the official openai SDK, with its
// defaults (two retries, its own backoff), configured from the environment
// as a person's app is: OPENAI_BASE_URL, OPENAI_API_KEY. Prints one JSON
// line: the answer, or the error the SDK threw. SDK_CHAT=1 makes it an
// editor's chat.completions.create instead, offering one tool: the answer's
// text, or the tool call it made (name and arguments).
const mod = require("openai");
const OpenAI = mod.default || mod.OpenAI || mod;
const client = new OpenAI();
const t0 = Date.now();

const tools = [{
  type: "function",
  function: {
    name: "read_file", description: "Read a file of the workspace.",
    parameters: { type: "object", properties: { path: { type: "string" } }, required: ["path"] },
  },
}];

async function chat() {
  const params = {
    model: process.env.SDK_MODEL, tools, max_completion_tokens: 2048,
    messages: [
      { role: "system", content: "You are an editor's coding agent." },
      { role: "user", content: process.env.SDK_PROMPT || "say hi" },
    ],
  };
  let text = "", tool = "", args = "", response;
  if (process.env.SDK_STREAM) {
    const got = await client.chat.completions.create({ ...params, stream: true, stream_options: { include_usage: true } }).withResponse();
    response = got.response;
    let usage = null;
    for await (const chunk of got.data) {
      if (chunk.usage) usage = chunk.usage;
      const d = chunk.choices[0] && chunk.choices[0].delta;
      if (!d) continue;
      if (d.content) text += d.content;
      for (const c of d.tool_calls || []) {
        if (c.function && c.function.name) tool = c.function.name;
        if (c.function && c.function.arguments) args += c.function.arguments;
      }
    }
    if (!usage) throw new Error("the stream carried no usage chunk");
  } else {
    const got = await client.chat.completions.create(params).withResponse();
    response = got.response;
    const m = got.data.choices[0].message;
    text = m.content || "";
    if (m.tool_calls && m.tool_calls.length) {
      tool = m.tool_calls[0].function.name;
      args = m.tool_calls[0].function.arguments;
    }
  }
  return { text, tool, args, response };
}

async function responses() {
  const params = { model: process.env.SDK_MODEL, input: "say hi" };
  let text = "", response;
  if (process.env.SDK_STREAM) {
    const got = await client.responses.create({ ...params, stream: true }).withResponse();
    response = got.response;
    for await (const ev of got.data) {
      if (ev.type === "response.output_text.delta") text += ev.delta;
    }
  } else {
    const got = await client.responses.create(params).withResponse();
    response = got.response;
    text = got.data.output_text;
  }
  return { text, tool: "", args: "", response };
}

(async () => {
  try {
    const { text, tool, args, response } = await (process.env.SDK_CHAT ? chat() : responses());
    console.log(JSON.stringify({
      ok: true, text, tool, args, ms: Date.now() - t0,
      credential: response.headers.get("x-subpool-credential") || "",
      attempts: response.headers.get("x-subpool-attempts") || "",
    }));
  } catch (e) {
    console.log(JSON.stringify({
      ok: false, ms: Date.now() - t0, name: e.constructor.name, status: e.status || 0,
      message: String(e.message),
      should_retry: (e.headers && e.headers.get && e.headers.get("x-should-retry")) || "",
    }));
  }
})();
