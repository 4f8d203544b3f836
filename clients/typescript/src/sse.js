// SSEParser reads a Server-Sent Events stream as the HTML standard defines
// it: lines end with CRLF, LF or CR, which may be split across chunks;
// "data" lines join with newlines; a comment line (":") is skipped; an event
// is dispatched at a blank line, and not at all when the stream stops before
// it (a cut connection never yields half an event).

export class SSEParser {
  #buf = "";
  #afterCR = false;
  #event = "";
  #id = undefined;
  #data = [];

  /**
   * push feeds the next piece of the stream and returns the events it
   * completed: {event, id, data} with `id` undefined for an event without
   * one and `data` the text.
   */
  push(text) {
    // A CR that ended the last piece may be the first half of a CRLF.
    if (this.#afterCR && text.startsWith("\n")) text = text.slice(1);
    this.#afterCR = false;
    this.#buf += text;
    const out = [];
    for (;;) {
      const i = this.#buf.search(/[\r\n]/);
      if (i < 0) break;
      const line = this.#buf.slice(0, i);
      if (this.#buf[i] === "\r" && i === this.#buf.length - 1) this.#afterCR = true;
      this.#buf = this.#buf.slice(this.#buf.startsWith("\r\n", i) ? i + 2 : i + 1);
      const ev = this.#line(line);
      if (ev) out.push(ev);
    }
    return out;
  }

  #line(line) {
    if (line === "") {
      const ev = this.#data.length > 0 ? { event: this.#event || "message", id: this.#id, data: this.#data.join("\n") } : null;
      this.#event = "";
      this.#id = undefined;
      this.#data = [];
      return ev;
    }
    if (line.startsWith(":")) return null;
    const colon = line.indexOf(":");
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    switch (field) {
      case "event":
        this.#event = value;
        break;
      case "data":
        this.#data.push(value);
        break;
      case "id":
        if (!value.includes("\0")) this.#id = value;
        break;
    }
    return null;
  }
}
