// Starts Swagger UI on the master's OpenAPI document. Requests from "Try it out" go to this
// master with the browser's `auth` cookie (the session the web UI signed in with).
(function () {
  var error = document.getElementById("swagger-error");
  if (typeof window.SwaggerUIBundle !== "function") {
    error.textContent = "Swagger UI did not load (swagger-ui-bundle.js is missing from this build).";
    error.style.display = "block";
    return;
  }
  window.ui = window.SwaggerUIBundle({
    url: "/api/v1/openapi.json",
    dom_id: "#swagger-ui",
    deepLinking: true,
    docExpansion: "none",
    defaultModelsExpandDepth: -1,
    onComplete: function () {
      document.body.setAttribute("data-swagger-ready", "1");
    },
  });
})();
