// The file editor's CodeMirror 6, bundled by scripts/vendor_static (esbuild) into one script,
// static/vendor/codemirror/editor.js, which sets window.HMSEditor. The languages are what game
// servers' configuration is written in: properties, YAML, JSON, TOML, INI, shell and logs.
import { basicSetup, EditorView } from "codemirror";
import { EditorState } from "@codemirror/state";
import { StreamLanguage } from "@codemirror/language";
import { json } from "@codemirror/lang-json";
import { yaml } from "@codemirror/lang-yaml";
import { properties } from "@codemirror/legacy-modes/mode/properties";
import { shell } from "@codemirror/legacy-modes/mode/shell";
import { toml } from "@codemirror/legacy-modes/mode/toml";

// A server log: its level words and timestamps stand out.
const log = {
  name: "log",
  token(stream) {
    if (stream.match(/^\[?\d{1,4}[-:/.]\d{1,2}[-:/.]\d{1,4}[^\]\s]*\]?/)) return "number";
    if (stream.match(/^\b(ERROR|SEVERE|FATAL|FAIL(ED|URE)?|Exception)\b/i)) return "invalid";
    if (stream.match(/^\bWARN(ING)?\b/i)) return "keyword";
    if (stream.match(/^\b(INFO|DEBUG|TRACE)\b/)) return "comment";
    stream.next();
    return null;
  },
};

const LANGUAGES = {
  json: () => json(),
  yaml: () => yaml(),
  properties: () => StreamLanguage.define(properties),
  ini: () => StreamLanguage.define(properties),
  toml: () => StreamLanguage.define(toml),
  shell: () => StreamLanguage.define(shell),
  log: () => StreamLanguage.define(log),
  text: () => [],
};

window.HMSEditor = {
  // The language of a file, by its name; "text" when none fits.
  languageOf(name) {
    const lower = name.toLowerCase();
    if (/\.(json|json5|mcmeta)$/.test(lower)) return "json";
    if (/\.(ya?ml)$/.test(lower)) return "yaml";
    if (/\.(properties|cfg|conf)$/.test(lower)) return "properties";
    if (/\.(ini|inf)$/.test(lower)) return "ini";
    if (/\.toml$/.test(lower)) return "toml";
    if (/\.(sh|bash)$/.test(lower) || lower === "start" || lower === "run") return "shell";
    if (/\.(log|txt)$/.test(lower) || /latest\.log|\.log\.\d+$/.test(lower)) return "log";
    return "text";
  },
  // An editor in `parent` holding `text`, highlighted as `language`; `onChange()` after edits.
  create(parent, text, language, onChange) {
    return new EditorView({
      parent,
      state: EditorState.create({
        doc: text,
        extensions: [
          basicSetup,
          (LANGUAGES[language] || LANGUAGES.text)(),
          EditorView.lineWrapping,
          EditorView.updateListener.of((update) => {
            if (update.docChanged && onChange) onChange();
          }),
        ],
      }),
    });
  },
};
