// Cards with Stripe.js (loaded from js.stripe.com, as Stripe requires): saving one on Billing →
// Payment methods, and confirming a payment the bank wants confirmed (3-D Secure).
(function () {
  "use strict";
  const gettext = window.gettext || ((s) => s);

  function say(text) {
    var message = document.getElementById("card-message");
    if (message) { message.textContent = text; }
  }

  function csrfToken() {
    var field = document.querySelector("input[name=csrfmiddlewaretoken]");
    if (field) { return field.value; }
    var match = document.cookie.match(/(?:^|; )csrftoken=([^;]+)/);
    return match ? decodeURIComponent(match[1]) : "";
  }

  function stripeOr(explain) {
    if (typeof window.Stripe !== "function") {
      say(gettext("Card entry could not load (Stripe.js is unreachable). Check your connection and reload the page."));
      return null;
    }
    return explain;
  }

  function addCard(section) {
    if (!stripeOr(true)) { return; }
    var stripe = window.Stripe(section.dataset.publishableKey);
    var card = stripe.elements().create("card");
    card.mount("#card-element");
    var button = document.getElementById("add-card-button");
    button.addEventListener("click", function () {
      button.disabled = true;
      say("");
      fetch(section.dataset.setupUrl, {
        method: "POST", credentials: "same-origin",
        headers: {"X-CSRFToken": csrfToken()},
      }).then(function (response) {
        return response.json().then(function (body) {
          if (!response.ok || !body.success) {
            throw new Error((body.error && body.error.message) || gettext("The card could not be saved."));
          }
          return body.data.setup_intent;
        });
      }).then(function (intent) {
        return stripe.confirmCardSetup(intent.client_secret, {payment_method: {card: card}})
          .then(function (result) {
            if (result.error) { throw new Error(result.error.message); }
            document.getElementById("setup-intent-field").value = intent.id;
            document.getElementById("card-save-form").submit();
          });
      }).catch(function (error) {
        say(error.message);
        button.disabled = false;
      });
    });
  }

  function confirmPayment(section) {
    if (!stripeOr(true)) { return; }
    var stripe = window.Stripe(section.dataset.publishableKey);
    stripe.handleNextAction({clientSecret: section.dataset.clientSecret}).then(function () {
      var intent = section.dataset.clientSecret.split("_secret_")[0];
      window.location.assign(section.dataset.returnUrl + "?payment_intent=" + encodeURIComponent(intent));
    });
  }

  window.addEventListener("load", function () {
    var adding = document.getElementById("add-card");
    if (adding) { addCard(adding); }
    var confirming = document.getElementById("confirm-payment");
    if (confirming) { confirmPayment(confirming); }
  });
})();
