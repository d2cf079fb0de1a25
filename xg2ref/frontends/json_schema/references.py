"""Where a JSON Schema `$ref` points: base URIs, embedded resources and anchors (JSON Schema
2020-12 Core §8.2 and §9; XGrammar-2 §2.1's JSON Schema front end; specs/05 "`$ref`").

A schema document may hold several *resources*: the root, and every subschema with an `$id`.
Each subschema has a base URI, that of the nearest resource around it (its own when it has an
`$id`), and a `$ref` is a URI reference resolved against the base of the schema that holds it:

    $id u at base b                        |-  a resource at join(b, u); its subschemas' base
    $anchor n (or draft 7's `$id: "#n"`)   |-  join(base, "#n") names the subschema
    $ref r at base b, join(b, r) = d#f     |-  d names a resource R of this document, and
                                               f empty: R;  f = "/a/b": the JSON pointer from R;
                                               f a name: the anchor d#f
                                               d names no resource: another document, never
                                               fetched: `True` (specs/05, "Not enforced")

`join` is RFC 3986 reference resolution for hierarchical bases (http, https, file and the
default base); a base of another scheme (`urn:`) takes fragments and absolute references only.
A document without `$id` has the base `DEFAULT_BASE`. `$dynamicAnchor` names its subschema as
`$anchor` does (the dynamic scope is not followed). Draft 4 (by `$schema`) reads `id`, not
`$id`. A pointer that names nothing in its resource is tried from the document's root (an `$id`
its author did not mean as a new base: such schemas are common).
"""

from __future__ import annotations

from typing import Any, Optional
from urllib.parse import unquote, urljoin, urlsplit

from ...exceptions import InvalidJSONError

DEFAULT_BASE = "xg2ref:/root.json"
_HIERARCHICAL = ("http", "https", "file", "xg2ref")
VALUES = ("enum", "const", "default", "examples")  # JSON values, not schemas: never walked
# maps from names to schemas: a schema there may be named like a value keyword ($defs.default)
SCHEMA_MAPS = ("$defs", "definitions", "properties", "patternProperties", "dependentSchemas", "dependencies")


def join(base: str, ref: str) -> str:
    """`ref` resolved against `base` (module docstring)."""
    if urlsplit(ref).scheme:
        return ref
    if ref.startswith("#"):
        return base.partition("#")[0] + ref
    scheme = urlsplit(base).scheme
    if scheme in _HIERARCHICAL:
        if scheme == "xg2ref":  # urljoin knows only the registered schemes
            return "xg2ref:" + urljoin("http://x" + base[len("xg2ref:"):], ref)[len("http://x"):]
        return urljoin(base, ref)
    return ref  # a relative reference against a base of another scheme: left as it is


class References:
    """The resources, anchors and base URIs of one schema document."""

    def __init__(self, root: Any, ref_alone: bool = False):
        self.root = root
        self.ref_alone = ref_alone  # drafts up to 7: an `$id` beside a `$ref` is ignored too
        self.unfetched: list = []  # the URIs of other documents references named (never fetched)
        uri = root.get("$schema") if isinstance(root, dict) else None
        self.draft4 = isinstance(uri, str) and ("draft-04" in uri or "draft-03" in uri)  # `id`, not `$id`
        self.base_of: dict[int, str] = {}  # id(subschema) -> its base URI
        self.resources: dict[str, Any] = {}  # URI without fragment -> the resource's schema
        self.anchors: dict[str, Any] = {}  # URI with a plain-name fragment -> the subschema
        self._walk(root, DEFAULT_BASE)
        self.resources.setdefault(DEFAULT_BASE, root)

    def _walk(self, root: Any, base: str) -> None:
        stack = [(root, base)]
        while stack:
            node, base = stack.pop()
            if isinstance(node, list):
                stack.extend((child, base) for child in node)
                continue
            if not isinstance(node, dict):
                continue
            ident = node.get("id") if self.draft4 else node.get("$id", node.get("id"))
            if isinstance(ident, str) and not isinstance(node.get("id"), dict) and not (
                    self.ref_alone and "$ref" in node):
                uri = join(base, ident)
                doc, _, fragment = uri.partition("#")
                if ident.startswith("#"):  # draft 7's location-independent name
                    self.anchors.setdefault(uri, node)
                else:
                    base = doc
                    self.resources.setdefault(doc, node)
                    if fragment:
                        self.anchors.setdefault(uri, node)
            for key in ("$anchor", "$dynamicAnchor"):
                if isinstance(node.get(key), str):
                    self.anchors.setdefault(join(base, "#" + node[key]), node)
            self.base_of[id(node)] = base
            for key, child in node.items():
                if key in SCHEMA_MAPS and isinstance(child, dict):
                    stack.extend((sub, base) for sub in child.values())
                elif key not in VALUES:
                    stack.append((child, base))

    def resolve_dynamic(self, ref: str, path: str, node: Any = None) -> Optional[Any]:
        """The subschema a `$dynamicRef` lands on when that does not depend on the path the
        validation took, else None: like `$ref` unless its target declares the `$dynamicAnchor`
        of the fragment's name; then the outermost resource of the dynamic scope that declares
        it. Every evaluation starts in the root's resource, so that is the root's resource when
        it declares the anchor (at the root or anywhere else in it), or else the only subschema
        that does."""
        target = self.resolve(ref, path, node)
        name = ref.partition("#")[2]
        if not isinstance(target, dict) or target.get("$dynamicAnchor") != name or "/" in name:
            return target
        if isinstance(self.root, dict) and self.root.get("$dynamicAnchor") == name:
            return self.root
        outermost = self.anchors.get(join(self.base_of.get(id(self.root), DEFAULT_BASE), "#" + name))
        if isinstance(outermost, dict) and outermost.get("$dynamicAnchor") == name:
            return outermost
        declaring = [n for n in self.declaring(name)]
        return declaring[0] if len(declaring) == 1 else None

    def declaring(self, name: str) -> list:
        seen, out = set(), []
        for node in self.anchors.values():
            if isinstance(node, dict) and node.get("$dynamicAnchor") == name and id(node) not in seen:
                seen.add(id(node))
                out.append(node)
        return out

    def resolve_uri(self, ref: str, node: Any = None) -> str:
        """The absolute URI `ref` names, read at `node`."""
        return join(self.base_of.get(id(node), DEFAULT_BASE) if node is not None else DEFAULT_BASE, ref)

    def resolve(self, ref: str, path: str, node: Any = None) -> Any:
        """The subschema `ref` names, read at `node` (module docstring); True for another
        document; InvalidJSONError for a pointer or anchor that names nothing."""
        base = self.base_of.get(id(node), DEFAULT_BASE) if node is not None else DEFAULT_BASE
        uri = join(base, ref)
        doc, _, fragment = uri.partition("#")
        resource = self.resources.get(doc)
        if resource is None:
            if doc == DEFAULT_BASE.partition("#")[0] or not doc:
                resource = self.root
            else:
                self.unfetched.append(uri)
                return True  # another document, which is never fetched: any value
        if not fragment:
            return resource
        if not fragment.startswith("/"):
            found = self.anchors.get(uri) or self.anchors.get(DEFAULT_BASE + "#" + fragment)
            if found is None:
                found = _legacy_anchor(self.root, unquote(fragment))
            if found is None:
                raise InvalidJSONError(f"{path}.$ref: no $anchor, $id or id {fragment!r} in the schema")
            return found
        found = _pointer(resource, fragment)
        if found is None and resource is not self.root:
            found = _pointer(self.root, fragment)  # (an `$id` the schema's author did not mean as a base)
        if found is None:
            raise InvalidJSONError(f"{path}.$ref: {ref!r} does not point into the schema")
        return found


def _pointer(target: Any, fragment: str) -> Optional[Any]:
    """The value the JSON pointer `fragment` ("/a/b") names from `target`, or None."""
    for raw in fragment[1:].split("/"):
        token = unquote(raw).replace("~1", "/").replace("~0", "~")
        if isinstance(target, dict) and token in target:
            target = target[token]
        elif isinstance(target, list) and token.isdigit() and int(token) < len(target):
            target = target[int(token)]
        else:
            return None
    return target


def _legacy_anchor(node: Any, name: str) -> Optional[Any]:
    """A subschema whose `$id` is the bare name (an early draft's spelling), searched anywhere."""
    stack = [node]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            if node.get("$id") == name:
                return node
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return None
