//! The `#[tool]` attribute of [oxp-lambda](https://crates.io/crates/oxp-lambda): declares a tool
//! from an async function. Use it through `oxp_lambda::tool`; the generated code names
//! `::oxp_lambda`, so this crate is not meant to be used alone.

use proc_macro::TokenStream;
use proc_macro2::{Span, TokenStream as TokenStream2};
use quote::{format_ident, quote};
use syn::parse::Parser;
use syn::spanned::Spanned;
use syn::{
    Attribute, Error, Expr, FnArg, GenericArgument, ItemFn, LitBool, LitInt, LitStr, Pat,
    PathArguments, Result, Type,
};

/// Declares a tool from an async function and generates `<fn>_tool() -> oxp_lambda::Tool`.
///
/// Arguments: `name = "Toolkit.Tool"` and `version = "1.0.0"` (required); `description =
/// "..."` (default: the function's doc comment); `title = "..."`; the flags `read_only`,
/// `destructive`, `idempotent_hint`, `long_running`, `asks_first`, `not_idempotent`,
/// `requires_user_id`; `task_support = "forbidden" | "optional" | "required"`;
/// `open_world` or `open_world = false`; `timeout_ms = 1500`; `secrets = [KEY, ...]`
/// (`SecretKey` constants); `authorization(id = "google", scopes = ["..."])`, repeatable;
/// `caller_scopes = ["crm:write", ...]`, the scopes the caller's own token must grant.
///
/// Parameters: `ToolContext` (or `&ToolContext`) receives the call's context; `State<T>` a
/// clone of the registry's shared `T` (the tool then needs one to build); `Input<T>` the whole
/// input as one `Deserialize + JsonSchema` type; any other parameter is one property of the
/// input, described by `#[describe("...")]` or a doc comment, optional when its type is an
/// `Option`.
#[proc_macro_attribute]
pub fn tool(args: TokenStream, item: TokenStream) -> TokenStream {
    match tool_tokens(args.into(), item.into()) {
        Ok(tokens) => tokens.into(),
        Err(e) => e.to_compile_error().into(),
    }
}

/// [`tool`] over `proc_macro2`'s tokens, which a unit test can make: the expansion, or the
/// error the tool's author reads.
fn tool_tokens(args: TokenStream2, item: TokenStream2) -> Result<TokenStream2> {
    let mut options = Options::default();
    syn::meta::parser(|meta| options.parse(meta)).parse2(args)?;
    expand(options, syn::parse2::<ItemFn>(item)?)
}

#[derive(Default)]
struct Options {
    name: Option<LitStr>,
    version: Option<LitStr>,
    description: Option<LitStr>,
    calls: Vec<TokenStream2>,
}

impl Options {
    fn parse(&mut self, meta: syn::meta::ParseNestedMeta<'_>) -> Result<()> {
        let key = meta
            .path
            .get_ident()
            .map(ToString::to_string)
            .unwrap_or_default();
        match key.as_str() {
            "name" => self.name = Some(meta.value()?.parse()?),
            "version" => self.version = Some(meta.value()?.parse()?),
            "description" => self.description = Some(meta.value()?.parse()?),
            "title" => {
                let title: LitStr = meta.value()?.parse()?;
                self.calls.push(quote!(.title(#title)));
            }
            "read_only" | "destructive" | "idempotent_hint" | "long_running" | "asks_first"
            | "not_idempotent" | "requires_user_id" => {
                let method = format_ident!("{key}");
                self.calls.push(quote!(.#method()));
            }
            "task_support" => self.calls.push(task_support(&meta)?),
            "open_world" => {
                let open = if meta.input.peek(syn::Token![=]) {
                    meta.value()?.parse::<LitBool>()?.value
                } else {
                    true
                };
                self.calls.push(quote!(.open_world(#open)));
            }
            "timeout_ms" => {
                let ms: LitInt = meta.value()?.parse()?;
                let ms: u64 = ms.base10_parse()?;
                self.calls
                    .push(quote!(.timeout(::std::time::Duration::from_millis(#ms))));
            }
            "secrets" => {
                let list: syn::ExprArray = meta.value()?.parse()?;
                for key in list.elems {
                    self.calls.push(quote!(.secret(#key)));
                }
            }
            "caller_scopes" => {
                let list: syn::ExprArray = meta.value()?.parse()?;
                let scopes = list.elems.iter();
                self.calls.push(quote!(.caller_scopes(
                    <[&'static str]>::iter(&[#(#scopes),*]).copied()
                )));
            }
            "authorization" => self.calls.push(authorization(&meta)?),
            _ => {
                return Err(meta.error(
                    "unknown argument: expected name, version, description, title, read_only, \
                     destructive, idempotent_hint, open_world, long_running, asks_first, not_idempotent, \
                     requires_user_id, task_support, timeout_ms, secrets, caller_scopes or authorization",
                ));
            }
        }
        Ok(())
    }
}

/// `task_support = "forbidden" | "optional" | "required"` as the builder's call.
fn task_support(meta: &syn::meta::ParseNestedMeta<'_>) -> Result<TokenStream2> {
    let support: LitStr = meta.value()?.parse()?;
    let variant = match support.value().as_str() {
        "forbidden" => format_ident!("Forbidden"),
        "optional" => format_ident!("Optional"),
        "required" => format_ident!("Required"),
        _ => {
            return Err(syn::Error::new(
                support.span(),
                "task_support is \"forbidden\", \"optional\" or \"required\"",
            ));
        }
    };
    Ok(quote!(.task_support(::oxp_lambda::TaskSupport::#variant)))
}

/// `authorization(id = "...", scopes = [...])` as the builder's call.
fn authorization(meta: &syn::meta::ParseNestedMeta<'_>) -> Result<TokenStream2> {
    let mut id: Option<LitStr> = None;
    let mut scopes: Vec<Expr> = Vec::new();
    meta.parse_nested_meta(|inner| {
        if inner.path.is_ident("id") {
            id = Some(inner.value()?.parse()?);
        } else if inner.path.is_ident("scopes") {
            let list: syn::ExprArray = inner.value()?.parse()?;
            scopes.extend(list.elems);
        } else {
            return Err(inner.error("expected `id` or `scopes`"));
        }
        Ok(())
    })?;
    let id = id.ok_or_else(|| meta.error("authorization needs `id = \"...\"`"))?;
    let scopes: &[Expr] = &scopes;
    Ok(quote!(.authorization(
        #id,
        <[&'static str]>::iter(&[#(#scopes),*]).copied()
    )))
}

/// What one parameter of the tool function receives.
enum Param {
    Context {
        by_ref: bool,
    },
    State(Type),
    Input(Type),
    Property {
        ident: syn::Ident,
        ty: Type,
        docs: Vec<String>,
    },
}

fn expand(options: Options, mut f: ItemFn) -> Result<TokenStream2> {
    let name = options
        .name
        .ok_or_else(|| Error::new(Span::call_site(), "#[tool] needs `name = \"Toolkit.Tool\"`"))?;
    let version = options
        .version
        .ok_or_else(|| Error::new(Span::call_site(), "#[tool] needs `version = \"1.0.0\"`"))?;
    let description = description_of(options.description, &f)?;
    let params = params_of(&mut f)?;
    let has_properties = params.iter().any(|p| matches!(p, Param::Property { .. }));

    let fn_name = &f.sig.ident;
    let vis = &f.vis;
    let tool_fn = format_ident!("{}_tool", fn_name);
    let doc = format!(
        "The `{}` tool ({}), declared by `#[tool]` on [`{fn_name}`].",
        name.value(),
        version.value()
    );
    let calls = &options.calls;
    let mut prelude = Vec::new();
    let mut args = Vec::new();
    let mut needs = Vec::new();
    let mut fields = Vec::new();
    let mut input_ty = quote!(::oxp_lambda::NoInput);
    for (i, param) in params.iter().enumerate() {
        match param {
            Param::Context { by_ref: true } => args.push(quote!(&__ctx)),
            Param::Context { by_ref: false } => args.push(quote!(__ctx.clone())),
            Param::State(ty) => {
                let var = format_ident!("__state{i}");
                prelude.push(quote!(let #var = ::oxp_lambda::State::<#ty>::from_context(&__ctx)?;));
                needs.push(quote!(.state::<#ty>()));
                args.push(quote!(#var));
            }
            Param::Input(ty) => {
                input_ty = quote!(#ty);
                args.push(quote!(::oxp_lambda::Input(__input)));
            }
            Param::Property { ident, ty, docs } => {
                fields.push(quote!(#(#[doc = #docs])* #ident: #ty));
                args.push(quote!(__input.#ident));
            }
        }
    }
    let input_struct = if has_properties {
        input_ty = quote!(__ToolInput);
        quote! {
            #[derive(::oxp_lambda::__private::serde::Deserialize, ::oxp_lambda::__private::schemars::JsonSchema)]
            #[serde(crate = "::oxp_lambda::__private::serde")]
            #[schemars(crate = "::oxp_lambda::__private::schemars")]
            struct __ToolInput { #(#fields,)* }
        }
    } else {
        quote!()
    };
    Ok(quote! {
        #f

        #[doc = #doc]
        #vis fn #tool_fn() -> ::oxp_lambda::Tool {
            #input_struct
            ::oxp_lambda::Tool::builder(#name, #version)
                .description(#description)
                #(#calls)*
                #(#needs)*
                .handler(|__input: #input_ty, __ctx: ::oxp_lambda::ToolContext| async move {
                    #(#prelude)*
                    #fn_name(#(#args),*).await
                })
        }
    })
}

/// The tool's description (`given`, else the function's doc comment), once the function is
/// found to be a plain `async fn`.
fn description_of(given: Option<LitStr>, f: &ItemFn) -> Result<String> {
    if f.sig.asyncness.is_none() {
        return Err(Error::new(
            f.sig.fn_token.span(),
            "#[tool] needs an `async fn`",
        ));
    }
    if !f.sig.generics.params.is_empty() {
        return Err(Error::new(
            f.sig.generics.span(),
            "a #[tool] function cannot be generic",
        ));
    }
    let description = match given {
        Some(d) => d.value(),
        None => doc_text(&f.attrs),
    };
    if description.is_empty() {
        return Err(Error::new(
            f.sig.ident.span(),
            "a tool needs a description: a doc comment or `description = \"...\"`",
        ));
    }
    Ok(description)
}

/// What each parameter of `f` receives (their doc comments taken for the input's schema).
fn params_of(f: &mut ItemFn) -> Result<Vec<Param>> {
    let mut params = Vec::new();
    for arg in &mut f.sig.inputs {
        let FnArg::Typed(arg) = arg else {
            return Err(Error::new(arg.span(), "a #[tool] function takes no `self`"));
        };
        let docs = take_docs(&mut arg.attrs)?;
        params.push(classify(&arg.pat, &arg.ty, docs)?);
    }
    let has_input = params.iter().any(|p| matches!(p, Param::Input(_)));
    let has_properties = params.iter().any(|p| matches!(p, Param::Property { .. }));
    if has_input && has_properties {
        return Err(Error::new(
            f.sig.inputs.span(),
            "take the input whole (`Input<T>`) or as parameters, not both",
        ));
    }
    Ok(params)
}

fn classify(pat: &Pat, ty: &Type, docs: Vec<String>) -> Result<Param> {
    if let Type::Reference(r) = ty {
        if last_segment(&r.elem).is_some_and(|(name, _)| name == "ToolContext") {
            return Ok(Param::Context { by_ref: true });
        }
        return Err(Error::new(
            ty.span(),
            "tool parameters are owned values (no references)",
        ));
    }
    match last_segment(ty) {
        Some((name, _)) if name == "ToolContext" => return Ok(Param::Context { by_ref: false }),
        Some((name, Some(inner))) if name == "State" => return Ok(Param::State(inner)),
        Some((name, Some(inner))) if name == "Input" => return Ok(Param::Input(inner)),
        _ => {}
    }
    let Pat::Ident(ident) = pat else {
        return Err(Error::new(
            pat.span(),
            "an input parameter needs a plain name (it is the property's name)",
        ));
    };
    Ok(Param::Property {
        ident: ident.ident.clone(),
        ty: ty.clone(),
        docs,
    })
}

/// The last path segment's name and its single type argument, if any.
fn last_segment(ty: &Type) -> Option<(String, Option<Type>)> {
    let Type::Path(path) = ty else { return None };
    let segment = path.path.segments.last()?;
    let inner = match &segment.arguments {
        PathArguments::AngleBracketed(args) if args.args.len() == 1 => match &args.args[0] {
            GenericArgument::Type(t) => Some(t.clone()),
            _ => None,
        },
        _ => None,
    };
    Some((segment.ident.to_string(), inner))
}

/// The doc comment's text: one leading space per line dropped, lines joined, trimmed.
fn doc_text(attrs: &[Attribute]) -> String {
    let lines: Vec<String> = attrs.iter().filter_map(doc_line).collect();
    lines.join("\n").trim().to_owned()
}

fn doc_line(attr: &Attribute) -> Option<String> {
    if !attr.path().is_ident("doc") {
        return None;
    }
    let syn::Meta::NameValue(nv) = &attr.meta else {
        return None;
    };
    let Expr::Lit(syn::ExprLit {
        lit: syn::Lit::Str(s),
        ..
    }) = &nv.value
    else {
        return None;
    };
    let text = s.value();
    Some(text.strip_prefix(' ').unwrap_or(&text).to_owned())
}

/// Removes a parameter's `#[describe("...")]` and doc comments (rustc accepts neither on a
/// parameter) and returns their text, for the property's description.
fn take_docs(attrs: &mut Vec<Attribute>) -> Result<Vec<String>> {
    let mut docs = Vec::new();
    let mut kept = Vec::new();
    for attr in attrs.drain(..) {
        if attr.path().is_ident("describe") {
            let text: LitStr = attr.parse_args()?;
            docs.push(text.value());
        } else if let Some(line) = doc_line(&attr) {
            docs.push(line);
        } else {
            kept.push(attr);
        }
    }
    *attrs = kept;
    Ok(docs)
}

#[cfg(test)]
mod tests;
